//! Every fixture HBase 2.6.4 wrote (scripts/hfile-fixtures) reads back cell
//! for cell as HBase's own reader listed it in FIXTURE.expected.json.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use basalt_hfile::{Codec, DataBlockEncoding, HFileCell, HFileReader};
use serde_json::Value;

fn fixtures() -> Vec<(PathBuf, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if let Some(stem) = name.strip_suffix(".expected.json") {
            let expected: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            out.push((dir.join(format!("{stem}.hfile")), expected));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(out.len() >= 10, "fixtures missing in {}", dir.display());
    out
}

/// The listing's byte strings: printable ASCII as itself, `\xHH` otherwise.
fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'x') {
            out.push(u8::from_str_radix(&s[i + 2..i + 4], 16).unwrap());
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

fn type_name(c: &HFileCell) -> &'static str {
    use basalt_types::CellType::*;
    match c.cell_type {
        Put => "Put",
        Delete => "Delete",
        DeleteColumn => "DeleteColumn",
        DeleteFamily => "DeleteFamily",
        DeleteFamilyVersion => "DeleteFamilyVersion",
    }
}

fn assert_cell(file: &Path, i: usize, got: &HFileCell, want: &Value) {
    let ctx = format!("{} cell {i}", file.display());
    assert_eq!(
        &got.row[..],
        unescape(want["row"].as_str().unwrap()),
        "{ctx} row"
    );
    assert_eq!(
        &got.family[..],
        unescape(want["family"].as_str().unwrap()),
        "{ctx} family"
    );
    assert_eq!(
        &got.qualifier[..],
        unescape(want["qualifier"].as_str().unwrap()),
        "{ctx} qualifier"
    );
    assert_eq!(
        got.timestamp,
        want["timestamp"].as_i64().unwrap(),
        "{ctx} timestamp"
    );
    assert_eq!(type_name(got), want["type"].as_str().unwrap(), "{ctx} type");
    assert_eq!(got.seq_id, want["seq_id"].as_u64().unwrap(), "{ctx} seq id");
    assert_eq!(
        &got.value[..],
        unescape(want["value"].as_str().unwrap()),
        "{ctx} value"
    );
    let tags = want["tags"].as_array().unwrap();
    assert_eq!(got.tags.len(), tags.len(), "{ctx} tag count");
    for (t, w) in got.tags.iter().zip(tags) {
        assert_eq!(
            u64::from(t.tag_type),
            w["type"].as_u64().unwrap(),
            "{ctx} tag type"
        );
        assert_eq!(
            &t.value[..],
            unescape(w["value"].as_str().unwrap()),
            "{ctx} tag value"
        );
    }
}

#[test]
fn every_fixture_reads_back_every_cell_as_hbase_listed_it() {
    for (file, expected) in fixtures() {
        let reader = HFileReader::open(&file).unwrap();
        let cells: Vec<HFileCell> = reader.cells().collect::<Result<_, _>>().unwrap();
        let want = expected["cells"].as_array().unwrap();
        assert_eq!(cells.len(), want.len(), "{}", file.display());
        assert_eq!(reader.entry_count(), want.len() as u64);
        for (i, (got, w)) in cells.iter().zip(want).enumerate() {
            assert_cell(&file, i, got, w);
        }
    }
}

#[test]
fn the_same_bytes_read_from_memory_give_the_same_cells() {
    for (file, _) in fixtures() {
        let from_file: Vec<_> = HFileReader::open(&file)
            .unwrap()
            .cells()
            .map(|c| c.unwrap())
            .collect();
        let bytes = std::fs::read(&file).unwrap();
        let mem = HFileReader::from_bytes(&file, bytes).unwrap();
        let from_mem: Vec<_> = mem.cells().map(|c| c.unwrap()).collect();
        assert_eq!(from_file, from_mem, "{}", file.display());
    }
}

/// A reader over `bytes` by ranges, counting the ranges it was asked for.
fn ranged(
    file: &Path,
    bytes: &bytes::Bytes,
    read_ahead: usize,
) -> (HFileReader, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (source, counter) = (bytes.clone(), std::sync::Arc::clone(&asked));
    let reader = HFileReader::from_ranges(
        file,
        bytes.len() as u64,
        read_ahead,
        Box::new(move |offset, len| {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let start = offset as usize;
            Ok(source.slice(start..start + len))
        }),
    )
    .unwrap();
    (reader, asked)
}

#[test]
fn the_same_bytes_read_by_ranges_give_the_same_cells_whatever_the_window() {
    for (file, _) in fixtures() {
        let bytes = bytes::Bytes::from(std::fs::read(&file).unwrap());
        let whole = HFileReader::from_bytes(&file, bytes.clone()).unwrap();
        let want: Vec<_> = whole.cells().map(|c| c.unwrap()).collect();
        // Smaller than a header, smaller than a block, and the whole file.
        for read_ahead in [1, 700, 64 << 10, basalt_hfile::DEFAULT_READ_AHEAD] {
            let (reader, _) = ranged(&file, &bytes, read_ahead);
            let got: Vec<_> = reader.cells().map(|c| c.unwrap()).collect();
            assert_eq!(got, want, "{} read ahead {read_ahead}", file.display());
            let middle = &want[want.len() / 2].row;
            let from_middle: Vec<_> = reader.seek(middle).unwrap().map(|c| c.unwrap()).collect();
            let expected: Vec<_> = want.iter().filter(|c| c.row >= *middle).cloned().collect();
            assert_eq!(
                from_middle,
                expected,
                "{} seek, read ahead {read_ahead}",
                file.display()
            );
        }
    }
}

#[test]
fn a_window_as_large_as_the_file_reads_it_in_a_few_ranges() {
    for (file, _) in fixtures() {
        let bytes = bytes::Bytes::from(std::fs::read(&file).unwrap());
        let (reader, asked) = ranged(&file, &bytes, bytes.len());
        let opened = asked.load(std::sync::atomic::Ordering::Relaxed);
        let cells = reader.cells().count();
        let scanned = asked.load(std::sync::atomic::Ordering::Relaxed) - opened;
        // The trailer, the load-on-open section; then one window for every
        // data block (a fixture holds several; two reads each without it).
        assert!(opened <= 2, "{}: {opened} ranges to open", file.display());
        assert!(
            scanned <= 1,
            "{}: {scanned} ranges for {cells} cells",
            file.display()
        );
    }
}

#[test]
fn a_storage_that_answers_short_is_a_clear_error() {
    let (file, _) = fixtures().remove(0);
    let bytes = bytes::Bytes::from(std::fs::read(&file).unwrap());
    let len = bytes.len() as u64;
    let error = HFileReader::from_ranges(
        &file,
        len,
        4096,
        Box::new(move |offset, len| {
            let start = offset as usize;
            Ok(bytes.slice(start..start + len / 2))
        }),
    )
    .unwrap_err();
    let text = error.to_string();
    assert!(text.contains("the storage gave"), "{text}");
    assert!(text.contains(&file.display().to_string()), "{text}");
}

#[test]
fn trailer_and_file_info_agree_with_how_each_fixture_was_written() {
    for (file, expected) in fixtures() {
        let r = HFileReader::open(&file).unwrap();
        let ctx = file.display().to_string();
        assert_eq!(r.trailer().major_version, 3, "{ctx}");
        assert_eq!(r.trailer().minor_version, 3, "{ctx}");
        assert_eq!(
            r.trailer().compression.name(),
            expected["compression"].as_str().unwrap(),
            "{ctx}"
        );
        assert_eq!(
            r.data_block_encoding().name(),
            expected["data_block_encoding"].as_str().unwrap(),
            "{ctx}"
        );
        assert_eq!(
            u64::from(r.trailer().num_data_index_levels),
            expected["data_index_levels"].as_u64().unwrap(),
            "{ctx}"
        );
        assert_eq!(
            r.cell_format().includes_tags,
            expected["includes_tags"].as_bool().unwrap(),
            "{ctx}"
        );
        assert_eq!(
            r.cell_format().tags_compressed,
            expected["tags_compressed"].as_bool().unwrap(),
            "{ctx}"
        );
        assert!(r.cell_format().includes_mvcc, "{ctx}");
        let bloom = expected["bloom"].as_str().unwrap();
        if bloom == "NONE" {
            assert!(r.general_bloom().is_none(), "{ctx}");
        } else {
            assert_eq!(r.bloom_type().as_deref(), Some(bloom), "{ctx}");
            let meta = r.general_bloom().unwrap();
            assert!(!meta.chunks.is_empty(), "{ctx}");
            assert!(meta.key_count > 0, "{ctx}");
        }
        // Every data block the index lists is where the index says.
        let blocks = r.data_block_index().unwrap();
        assert!(!blocks.is_empty(), "{ctx}");
        for e in &blocks {
            let b = r
                .read_block(
                    e.offset,
                    r.trailer().load_on_open_offset,
                    Some(e.on_disk_size),
                )
                .unwrap();
            assert!(b.header.block_type.is_data(), "{ctx}");
            let checksum = match b.header.checksum_type {
                basalt_hfile::ChecksumType::Crc32 => "CRC32",
                basalt_hfile::ChecksumType::Crc32c => "CRC32C",
                basalt_hfile::ChecksumType::Null => "NULL",
            };
            assert_eq!(checksum, expected["checksum"].as_str().unwrap(), "{ctx}");
            assert_eq!(
                b.header.bytes_per_checksum as u64,
                expected["bytes_per_checksum"].as_u64().unwrap(),
                "{ctx}"
            );
        }
    }
}

#[test]
fn the_fixtures_cover_every_encoding_and_every_codec_hbase_could_write_here() {
    let mut encodings = std::collections::HashSet::new();
    let mut codecs = std::collections::HashSet::new();
    let mut multi_level = false;
    for (file, _) in fixtures() {
        let r = HFileReader::open(&file).unwrap();
        encodings.insert(r.data_block_encoding());
        codecs.insert(r.trailer().compression);
        multi_level |= r.trailer().num_data_index_levels >= 3;
    }
    for e in [
        DataBlockEncoding::None,
        DataBlockEncoding::Prefix,
        DataBlockEncoding::Diff,
        DataBlockEncoding::FastDiff,
        DataBlockEncoding::RowIndexV1,
    ] {
        assert!(encodings.contains(&e), "{e:?}");
    }
    // ZSTD: see docs/hfile-format.md (HBase cannot write it on this machine).
    for c in [Codec::None, Codec::Gz, Codec::Snappy, Codec::Lz4] {
        assert!(codecs.contains(&c), "{c:?}");
    }
    assert!(multi_level);
}

#[test]
fn seek_finds_the_first_cell_at_or_after_each_row() {
    for (file, _) in fixtures() {
        let r = HFileReader::open(&file).unwrap();
        let all: Vec<HFileCell> = r.cells().map(|c| c.unwrap()).collect();
        let mut rows: Vec<Vec<u8>> = all.iter().map(|c| c.row.to_vec()).collect();
        rows.dedup();
        let mut probes: Vec<Vec<u8>> = Vec::new();
        for row in &rows {
            probes.push(row.clone());
            let mut after = row.clone();
            after.push(0);
            probes.push(after);
            probes.push(row[..row.len() - 1].to_vec());
        }
        probes.push(Vec::new());
        probes.push(vec![0xff; 12]);
        for probe in probes {
            let want: Vec<&HFileCell> = all.iter().filter(|c| c.row[..] >= probe[..]).collect();
            let got: Vec<HFileCell> = r.seek(&probe).unwrap().map(|c| c.unwrap()).collect();
            assert_eq!(got.len(), want.len(), "{} seek {probe:?}", file.display());
            assert!(
                got.iter().zip(want).all(|(a, b)| a == b),
                "{} seek {probe:?}",
                file.display()
            );
        }
    }
}

#[test]
fn the_row_bloom_filter_contains_every_row_and_few_others() {
    let mut checked = 0;
    for (file, expected) in fixtures() {
        if expected["bloom"].as_str() != Some("ROW") {
            continue;
        }
        let r = HFileReader::open(&file).unwrap();
        let rows: Vec<Vec<u8>> = r.cells().map(|c| c.unwrap().row.to_vec()).collect();
        for row in &rows {
            assert!(
                r.might_contain(row).unwrap(),
                "{} row {row:?}",
                file.display()
            );
        }
        let absent = (0..400)
            .filter(|i| {
                let probe = format!("row-{i:05}-absent");
                r.might_contain(probe.as_bytes()).unwrap()
            })
            .count();
        assert!(
            absent < 40,
            "{}: {absent} of 400 absent rows pass",
            file.display()
        );
        checked += 1;
    }
    assert!(checked >= 5);
}
