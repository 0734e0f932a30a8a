//! Garbage input never panics the engine's decoders, and never makes them
//! allocate more than a small multiple of the input.
//!
//! Each decoder gets arbitrary bytes and mutated valid encodings (bytes
//! flipped, inserted, deleted, or the tail cut off). A case passes when the
//! decoder returns an error or a value (a round trip where the input is
//! valid) without panicking, and when the most bytes allocated at once
//! while decoding stay under `factor * input length + constant` (the bounds
//! are per decoder, below), measured by the counting global allocator of
//! this test binary.
//!
//! Covered: store-file data blocks, index blocks and bloom chunks (through
//! `storefile::raw`, since those sit behind block checksums), store
//! manifests (`StoreManifest::decode`), snapshot manifests
//! (`SnapshotManifest::decode`), and WAL segments through
//! `Wal::open`, including payloads re-sealed with valid checksums so the
//! record decoder itself sees the damage.
//!
//! Failing cases are persisted in `garbage_input.proptest-regressions`
//! beside this file; commit that file when it appears.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use bytes::Bytes;
use proptest::prelude::*;
use proptest::strategy::ValueTree;

use basalt_engine::manifest::{FileLink, ManifestFile, StoreManifest};
use basalt_engine::snapshot::{
    SnapshotFile, SnapshotKind, SnapshotManifest, SnapshotRegion, SnapshotStore,
};
use basalt_engine::storefile::raw::{self, IndexEntryView};
use basalt_engine::wal::{Wal, WalEdit, WalOptions};
use basalt_types::{
    Cell, CellType, ColumnFamilyDescriptor, DataBlockEncoding, Durability, TableDescriptor,
};

// The proptest settings, the counting global allocator, the bound check
// and the byte mutations are shared by every crate's garbage-input test.
#[path = "../../../test-support/garbage.rs"]
mod garbage;
use garbage::{arb_mutations, check_bounded, config, mutate, peak_while};
// ---------------------------------------------------------------------------
// Store-file data blocks
// ---------------------------------------------------------------------------

/// Walking a data block keeps one key buffer and two cells (the current and
/// the previous, whose row and qualifier it may share), each at most the
/// block's size, with growth slack.
const BLOCK_FACTOR: usize = 4;
const BLOCK_CONSTANT: usize = 1024;

fn arb_cell_type() -> impl Strategy<Value = CellType> {
    prop_oneof![
        Just(CellType::Put),
        Just(CellType::Delete),
        Just(CellType::DeleteFamilyVersion),
        Just(CellType::DeleteColumn),
        Just(CellType::DeleteFamily),
    ]
}

/// Cells of family `f` in KeyValue order; few distinct rows so prefixes
/// are shared.
fn arb_cells() -> impl Strategy<Value = Vec<Cell>> {
    let cell = (
        proptest::collection::vec(0u8..4, 1..6),
        proptest::collection::vec(any::<u8>(), 0..6),
        any::<i64>(),
        arb_cell_type(),
        any::<u64>(),
        proptest::collection::vec(any::<u8>(), 0..24),
    )
        .prop_map(|(row, q, ts, t, seq, v)| {
            let mut c = Cell::put(row, "f", q, ts, v);
            c.cell_type = t;
            c.sequence_id = seq;
            c
        });
    proptest::collection::vec(cell, 1..40).prop_map(|mut cells| {
        cells.sort();
        cells.dedup_by(|a, b| a.compare_key(b).is_eq());
        cells
    })
}

fn arb_encoding() -> impl Strategy<Value = DataBlockEncoding> {
    prop_oneof![
        Just(DataBlockEncoding::None),
        Just(DataBlockEncoding::Prefix)
    ]
}

/// Decodes `payload` every way the read path does, measuring the peak.
fn walk_data_block(payload: Vec<u8>, target: &Cell) -> (bool, usize) {
    let len = payload.len();
    let payload = Bytes::from(payload);
    let family = Bytes::from_static(b"f");
    let (ok, peak) = peak_while(|| {
        let walked = raw::decode_data_block(payload.clone(), &family, drop);
        let seeked = raw::seek_data_block(payload.clone(), &family, target);
        walked.is_ok() && seeked.is_ok()
    });
    check_bounded("data block", peak, len, BLOCK_FACTOR, BLOCK_CONSTANT);
    (ok, peak)
}

#[test]
fn a_valid_data_block_round_trips_through_the_exposed_decoder() {
    let cells: Vec<Cell> = (0..50)
        .map(|i| Cell::put(format!("row{:02}", i / 3), "f", format!("q{i}"), 7, "v"))
        .collect();
    let mut sorted = cells.clone();
    sorted.sort();
    let payload = Bytes::from(raw::encode_data_block(&sorted, DataBlockEncoding::Prefix));
    let mut back = vec![];
    let n = raw::decode_data_block(payload.clone(), &Bytes::from_static(b"f"), |c| back.push(c))
        .unwrap();
    assert_eq!(n, sorted.len());
    assert_eq!(back, sorted);
    let found = raw::seek_data_block(payload, &Bytes::from_static(b"f"), &sorted[10]).unwrap();
    assert_eq!(found.as_ref(), Some(&sorted[10]));
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn valid_data_blocks_round_trip(cells in arb_cells(), encoding in arb_encoding()) {
        let payload = Bytes::from(raw::encode_data_block(&cells, encoding));
        let mut back = vec![];
        raw::decode_data_block(payload, &Bytes::from_static(b"f"), |c| back.push(c)).unwrap();
        prop_assert_eq!(back, cells);
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_data_block_decoder(
        data in proptest::collection::vec(any::<u8>(), 0..600),
        target in arb_cells(),
    ) {
        walk_data_block(data, &target[0]);
    }

    #[test]
    fn mutated_data_blocks_decode_or_fail_cleanly(
        cells in arb_cells(),
        encoding in arb_encoding(),
        mutations in arb_mutations(),
    ) {
        let mut payload = raw::encode_data_block(&cells, encoding);
        mutate(&mut payload, &mutations);
        walk_data_block(payload, &cells[cells.len() / 2]);
    }
}

// ---------------------------------------------------------------------------
// Store-file index blocks
// ---------------------------------------------------------------------------

/// An index block is walked entry by entry with borrowed keys: the block
/// view and a few messages.
const INDEX_FACTOR: usize = 2;
const INDEX_CONSTANT: usize = 512;

fn arb_index_entries() -> impl Strategy<Value = Vec<(usize, Vec<u8>, u64, u32, u64)>> {
    let entry = (
        proptest::collection::vec(any::<u8>(), 0..30),
        any::<usize>(),
        any::<u64>(),
        any::<u32>(),
        0u64..4,
    )
        .prop_map(|(key, row, offset, size, flags)| {
            let row_len = row % (key.len() + 1);
            (row_len, key, offset, size, flags)
        });
    proptest::collection::vec(entry, 0..30).prop_map(|mut v| {
        v.sort_by(|a, b| a.1.cmp(&b.1));
        v
    })
}

fn views(entries: &[(usize, Vec<u8>, u64, u32, u64)]) -> Vec<IndexEntryView<'_>> {
    entries
        .iter()
        .map(|(row_len, key, offset, size, flags)| IndexEntryView {
            row_len: *row_len,
            key,
            offset: *offset,
            size: *size,
            flags: *flags,
        })
        .collect()
}

fn walk_index_block(payload: Vec<u8>, probe: &[u8]) -> bool {
    let len = payload.len();
    let payload = Bytes::from(payload);
    let (ok, peak) = peak_while(|| {
        let mut keys = 0usize;
        let walked = raw::decode_index_block(payload.clone(), |e| keys += e.key.len());
        let searched = raw::search_index_block(payload.clone(), probe);
        walked.is_ok() && searched.is_ok()
    });
    check_bounded("index block", peak, len, INDEX_FACTOR, INDEX_CONSTANT);
    ok
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn valid_index_blocks_round_trip(entries in arb_index_entries()) {
        let written = views(&entries);
        let payload = Bytes::from(raw::encode_index_block(&written));
        let mut back: Vec<(usize, Vec<u8>, u64, u32, u64)> = vec![];
        raw::decode_index_block(payload, |e| {
            back.push((e.row_len, e.key.to_vec(), e.offset, e.size, e.flags))
        })
        .unwrap();
        prop_assert_eq!(back, entries);
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_index_block_decoder(
        data in proptest::collection::vec(any::<u8>(), 0..600),
        probe in proptest::collection::vec(any::<u8>(), 0..10),
    ) {
        walk_index_block(data, &probe);
    }

    #[test]
    fn mutated_index_blocks_decode_or_fail_cleanly(
        entries in arb_index_entries(),
        mutations in arb_mutations(),
        probe in proptest::collection::vec(any::<u8>(), 0..10),
    ) {
        let mut payload = raw::encode_index_block(&views(&entries));
        mutate(&mut payload, &mutations);
        walk_index_block(payload, &probe);
    }
}

// ---------------------------------------------------------------------------
// Store-file bloom chunks
// ---------------------------------------------------------------------------

/// A bloom chunk is a view of its payload: nothing but the error message.
const BLOOM_FACTOR: usize = 1;
const BLOOM_CONSTANT: usize = 256;

fn probe_bloom(payload: Vec<u8>, keys: &[Vec<u8>]) -> Option<Vec<bool>> {
    let len = payload.len();
    let payload = Bytes::from(payload);
    let (answers, peak) = peak_while(|| {
        raw::decode_bloom_chunk(payload).ok().map(|chunk| {
            keys.iter()
                .map(|k| chunk.may_contain(k))
                .collect::<Vec<_>>()
        })
    });
    // The answers vector is the test's, not the decoder's.
    let answers_bytes = keys.len();
    check_bounded(
        "bloom chunk",
        peak.saturating_sub(answers_bytes),
        len,
        BLOOM_FACTOR,
        BLOOM_CONSTANT,
    );
    answers
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn valid_bloom_chunks_have_no_false_negatives(
        keys in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..20), 0..60),
    ) {
        let payload = raw::encode_bloom_chunk(keys.iter().map(Vec::as_slice));
        let answers = probe_bloom(payload, &keys).unwrap();
        prop_assert!(answers.iter().all(|&a| a));
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_bloom_chunk_decoder(
        data in proptest::collection::vec(any::<u8>(), 0..300),
        keys in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..20), 0..8),
    ) {
        probe_bloom(data, &keys);
    }

    #[test]
    fn mutated_bloom_chunks_decode_or_fail_cleanly(
        keys in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..20), 0..60),
        mutations in arb_mutations(),
    ) {
        let mut payload = raw::encode_bloom_chunk(keys.iter().map(Vec::as_slice));
        mutate(&mut payload, &mutations);
        probe_bloom(payload, &keys);
    }
}

// ---------------------------------------------------------------------------
// Store manifests
// ---------------------------------------------------------------------------

/// JSON parsing builds the manifest's vectors and strings by doubling, and
/// the error message quotes at most the header line.
const MANIFEST_FACTOR: usize = 4;
const MANIFEST_CONSTANT: usize = 2048;

fn arb_manifest() -> impl Strategy<Value = StoreManifest> {
    let link = proptest::option::of(
        (
            any::<u64>(),
            any::<u64>(),
            proptest::collection::vec(any::<u8>(), 0..6),
        )
            .prop_map(|(region_id, file_id, lower)| FileLink {
                table: None,
                region_id,
                file_id,
                lower: Bytes::from(lower),
                upper: Bytes::new(),
            }),
    );
    let file = (
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
        any::<bool>(),
        link,
    )
        .prop_map(|(id, size, max_sequence, major, link)| ManifestFile {
            id,
            size,
            max_sequence,
            cells: size / 3,
            major,
            link,
        });
    (
        1u64..1000,
        any::<u64>(),
        any::<u64>(),
        proptest::collection::vec(file, 0..6),
    )
        .prop_map(
            |(version, flushed_sequence, next_file_id, files)| StoreManifest {
                version,
                flushed_sequence,
                next_file_id,
                files,
                epoch: 0,
            },
        )
}

/// Header line plus body, with the checksum and length the header names
/// recomputed (as docs/manifest-format.md lays them out), so that damage
/// to the body reaches the JSON decoder.
fn reseal_manifest(body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "BASALT-STORE-MANIFEST 2 {:08x} {}\n",
        crc32c::crc32c(body),
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

fn decode_manifest(bytes: &[u8], version: u64) -> Option<StoreManifest> {
    let (m, peak) = peak_while(|| StoreManifest::decode(bytes, version));
    let m = m.ok();
    // The decoded manifest is owned by the test once returned, but it was
    // built while measuring: it is part of what the bound covers.
    check_bounded(
        "manifest",
        peak,
        bytes.len(),
        MANIFEST_FACTOR,
        MANIFEST_CONSTANT,
    );
    m
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn valid_manifests_round_trip(m in arb_manifest()) {
        let bytes = m.encode().unwrap();
        prop_assert_eq!(decode_manifest(&bytes, m.version), Some(m));
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_manifest_decoder(
        data in proptest::collection::vec(any::<u8>(), 0..400),
        sealed in any::<bool>(),
    ) {
        let bytes = if sealed { reseal_manifest(&data) } else { data };
        decode_manifest(&bytes, 1);
    }

    #[test]
    fn mutated_manifests_decode_or_fail_cleanly(
        m in arb_manifest(),
        mutations in arb_mutations(),
        sealed in any::<bool>(),
    ) {
        let mut bytes = m.encode().unwrap();
        if sealed {
            let newline = bytes.iter().position(|&b| b == b'\n').unwrap();
            let mut body = bytes.split_off(newline + 1);
            mutate(&mut body, &mutations);
            bytes = reseal_manifest(&body);
        } else {
            mutate(&mut bytes, &mutations);
        }
        decode_manifest(&bytes, m.version);
    }
}

// ---------------------------------------------------------------------------
// Snapshot manifests
// ---------------------------------------------------------------------------

/// As store manifests: JSON builds vectors and strings by doubling; the
/// descriptor's families add their option strings.
const SNAPSHOT_FACTOR: usize = 6;
const SNAPSHOT_CONSTANT: usize = 4096;

fn arb_snapshot() -> impl Strategy<Value = SnapshotManifest> {
    let file = (any::<u64>(), any::<u64>(), any::<u64>(), 0u8..3).prop_map(
        |(region_id, file_id, size, bound)| SnapshotFile {
            table: if bound == 0 {
                "t".into()
            } else {
                "ns:src".into()
            },
            region_id,
            file_id,
            lower: if bound == 2 {
                Bytes::from_static(b"a")
            } else {
                Bytes::new()
            },
            upper: Bytes::new(),
            size,
            max_sequence: size / 2,
            cells: size / 3,
        },
    );
    let files = proptest::collection::vec(file, 0..4);
    (
        proptest::collection::vec(files, 1..4),
        any::<i64>(),
        any::<i64>(),
        0u8..3,
    )
        .prop_map(|(regions, created_ms, ttl_secs, kind)| {
            let n = regions.len();
            let regions = regions
                .into_iter()
                .enumerate()
                .map(|(i, files)| SnapshotRegion {
                    id: i as u64 + 1,
                    start_key: if i == 0 {
                        Bytes::new()
                    } else {
                        Bytes::from(format!("k{i}"))
                    },
                    end_key: if i + 1 == n {
                        Bytes::new()
                    } else {
                        Bytes::from(format!("k{}", i + 1))
                    },
                    stores: vec![SnapshotStore {
                        family: "f".into(),
                        files,
                    }],
                })
                .collect();
            SnapshotManifest {
                name: "snap-1".into(),
                table: "t".into(),
                created_ms,
                ttl_secs,
                kind: [
                    SnapshotKind::Flush,
                    SnapshotKind::Skipflush,
                    SnapshotKind::Disabled,
                ][kind as usize],
                descriptor: TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("f")),
                regions,
                held_for: None,
                lease_until_ms: None,
                nonce: None,
                owner: None,
            }
        })
}

/// Header line plus body with the checksum and length recomputed, so that
/// damage to the body reaches the JSON decoder and the checks after it.
fn reseal_snapshot(body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "BASALT-SNAPSHOT 1 {:08x} {}\n",
        crc32c::crc32c(body),
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

fn decode_snapshot(bytes: &[u8]) -> Option<SnapshotManifest> {
    let (m, peak) = peak_while(|| SnapshotManifest::decode(bytes));
    if let Err((offset, message)) = &m {
        // The error says where: an offset inside the input.
        assert!(
            *offset <= bytes.len() as u64,
            "offset {offset} past the input: {message}"
        );
    }
    check_bounded(
        "snapshot manifest",
        peak,
        bytes.len(),
        SNAPSHOT_FACTOR,
        SNAPSHOT_CONSTANT,
    );
    m.ok()
}

#[test]
fn a_snapshot_manifest_breaking_its_invariants_is_refused_with_a_reason() {
    let valid = arb_snapshot()
        .new_tree(&mut proptest::test_runner::TestRunner::deterministic())
        .unwrap()
        .current();
    let refuse = |m: SnapshotManifest, words: &str| {
        let bytes = m.encode().unwrap();
        let (offset, message) = SnapshotManifest::decode(&bytes).unwrap_err();
        assert!(message.contains(words), "'{message}' lacks '{words}'");
        assert!(offset > 0, "the body's offset");
    };
    let mut m = valid.clone();
    m.name = ".hidden".into();
    refuse(m, "snapshot name");
    let mut m = valid.clone();
    m.table = "other".into();
    refuse(m, "does not match its descriptor");
    let mut m = valid.clone();
    m.regions.clear();
    refuse(m, "no region");
    let mut m = valid.clone();
    m.regions[0].start_key = Bytes::from_static(b"x");
    refuse(m, "does not start where");
    let mut m = valid.clone();
    m.regions[0].stores[0].family = "nope".into();
    refuse(m, "descriptor lacks");
    let mut m = valid;
    m.regions[0].stores[0].files.push(SnapshotFile {
        table: String::new(),
        region_id: 1,
        file_id: 1,
        lower: Bytes::new(),
        upper: Bytes::new(),
        size: 1,
        max_sequence: 1,
        cells: 1,
    });
    refuse(m, "names no table");
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn valid_snapshot_manifests_round_trip(m in arb_snapshot()) {
        let bytes = m.encode().unwrap();
        prop_assert_eq!(decode_snapshot(&bytes), Some(m));
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_snapshot_decoder(
        data in proptest::collection::vec(any::<u8>(), 0..400),
        sealed in any::<bool>(),
    ) {
        let bytes = if sealed { reseal_snapshot(&data) } else { data };
        decode_snapshot(&bytes);
    }

    #[test]
    fn mutated_snapshot_manifests_decode_or_fail_cleanly(
        m in arb_snapshot(),
        mutations in arb_mutations(),
        sealed in any::<bool>(),
    ) {
        let mut bytes = m.encode().unwrap();
        if sealed {
            let newline = bytes.iter().position(|&b| b == b'\n').unwrap();
            let mut body = bytes.split_off(newline + 1);
            mutate(&mut body, &mutations);
            bytes = reseal_snapshot(&body);
        } else {
            mutate(&mut bytes, &mutations);
        }
        decode_snapshot(&bytes);
    }
}

// ---------------------------------------------------------------------------
// WAL segments
// ---------------------------------------------------------------------------

/// Replay reads through a 64 KiB buffer (the constant, with the log's own
/// set-up) and holds one record payload and its decoded edit, whose cells
/// are views of the payload (the decoder refuses a cell count the payload
/// cannot hold before reserving room for the cells).
const WAL_FACTOR: usize = 4;
const WAL_CONSTANT: usize = 80 << 10;

const SEGMENT_HEADER_LEN: usize = 24;
const RECORD_HEADER_LEN: usize = 12;

fn arb_wal_edits() -> impl Strategy<Value = Vec<WalEdit>> {
    let edit = (
        0u64..4,
        proptest::collection::vec(any::<u8>(), 1..10),
        proptest::collection::vec(
            (
                proptest::collection::vec(any::<u8>(), 0..6),
                any::<i64>(),
                arb_cell_type(),
                proptest::collection::vec(any::<u8>(), 0..30),
            ),
            0..5,
        ),
    );
    proptest::collection::vec(edit, 1..6).prop_map(|edits| {
        edits
            .into_iter()
            .enumerate()
            .map(|(i, (region_id, row, cells))| {
                let sequence_id = i as u64 + 1;
                WalEdit {
                    region_id,
                    sequence_id,
                    cells: cells
                        .into_iter()
                        .map(|(q, ts, t, v)| {
                            let mut c = Cell::put(row.clone(), "f", q, ts, v);
                            c.cell_type = t;
                            c.sequence_id = sequence_id;
                            c
                        })
                        .collect(),
                }
            })
            .collect()
    })
}

/// The segment file the log writes for `edits`, and its name.
fn write_segment(edits: &[WalEdit]) -> (String, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let (wal, _) = Wal::open(dir.path(), WalOptions::default(), |_| Ok(())).unwrap();
    for e in edits {
        wal.log(e, Durability::SyncWal).unwrap();
    }
    wal.close().unwrap();
    drop(wal);
    let mut segments: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    segments.sort();
    let path = segments.first().expect("a segment was written");
    let name = path.file_name().unwrap().to_str().unwrap().to_string();
    (name, std::fs::read(path).unwrap())
}

/// Byte ranges of the records' payloads in a segment the log wrote.
fn record_payloads(segment: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut out = vec![];
    let mut at = SEGMENT_HEADER_LEN;
    while at + RECORD_HEADER_LEN <= segment.len() {
        let len = u32::from_le_bytes(segment[at..at + 4].try_into().unwrap()) as usize;
        let start = at + RECORD_HEADER_LEN;
        out.push(start..start + len);
        at = start + len;
    }
    out
}

/// Frames `payload` as a record with valid checksums (docs/wal-format.md).
fn seal_record(payload: &[u8], out: &mut Vec<u8>) {
    let mut header = [0u8; RECORD_HEADER_LEN];
    header[0..4].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    header[4..8].copy_from_slice(&crc32c::crc32c(payload).to_le_bytes());
    let crc = crc32c::crc32c(&header[0..8]);
    header[8..12].copy_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&header);
    out.extend_from_slice(payload);
}

/// Replays a segment file named `name` holding `bytes` in a fresh log
/// directory; returns the edits replayed, or `None` for an error.
fn replay(name: &str, bytes: &[u8]) -> Option<Vec<WalEdit>> {
    let dir = tempfile::tempdir().unwrap();
    let wal_dir = dir.path().join("wal");
    std::fs::create_dir(&wal_dir).unwrap();
    std::fs::write(wal_dir.join(name), bytes).unwrap();
    let (result, peak) = peak_while(|| replay_in(&wal_dir));
    check_bounded("WAL segment", peak, bytes.len(), WAL_FACTOR, WAL_CONSTANT);
    result
}

fn replay_in(dir: &Path) -> Option<Vec<WalEdit>> {
    let mut edits = vec![];
    let opened = Wal::open(dir, WalOptions::default(), |e| {
        edits.push(e);
        Ok(())
    });
    let (wal, _) = opened.ok()?;
    wal.close().ok()?;
    Some(edits)
}

proptest! {
    #![proptest_config(config(32))]

    #[test]
    fn valid_wal_segments_replay_every_edit(edits in arb_wal_edits()) {
        let (name, bytes) = write_segment(&edits);
        prop_assert_eq!(replay(&name, &bytes), Some(edits));
    }

    #[test]
    fn arbitrary_bytes_never_panic_wal_replay(
        data in proptest::collection::vec(any::<u8>(), 0..400),
        with_header in any::<bool>(),
        edits in arb_wal_edits(),
    ) {
        // Either a whole file of garbage, or garbage records behind the
        // valid header of a real segment.
        let (name, real) = write_segment(&edits[..1]);
        let mut bytes = if with_header { real[..SEGMENT_HEADER_LEN].to_vec() } else { vec![] };
        bytes.extend_from_slice(&data);
        replay(&name, &bytes);
    }

    #[test]
    fn arbitrary_payloads_sealed_as_records_never_panic_the_record_decoder(
        payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 1..4),
        edits in arb_wal_edits(),
    ) {
        let (name, real) = write_segment(&edits[..1]);
        let mut bytes = real[..SEGMENT_HEADER_LEN].to_vec();
        for p in &payloads {
            seal_record(p, &mut bytes);
        }
        replay(&name, &bytes);
    }

    #[test]
    fn mutated_wal_segments_replay_or_fail_cleanly(
        edits in arb_wal_edits(),
        mutations in arb_mutations(),
        which in any::<proptest::sample::Index>(),
        reseal in any::<bool>(),
    ) {
        let (name, real) = write_segment(&edits);
        let bytes = if reseal {
            // Damage one record's payload and give it valid checksums, so
            // the payload decoder sees it.
            let records = record_payloads(&real);
            let damaged = which.index(records.len());
            let mut out = real[..SEGMENT_HEADER_LEN].to_vec();
            for (i, r) in records.iter().enumerate() {
                let mut payload = real[r.clone()].to_vec();
                if i == damaged {
                    mutate(&mut payload, &mutations);
                }
                seal_record(&payload, &mut out);
            }
            out
        } else {
            let mut bytes = real;
            mutate(&mut bytes, &mutations);
            bytes
        };
        replay(&name, &bytes);
    }
}

#[test]
fn the_allocation_meter_sees_what_is_allocated() {
    let (v, peak) = peak_while(|| vec![0u8; 10_000]);
    assert!(peak >= 10_000, "peak {peak}");
    drop(v);
    let ((), peak) = peak_while(|| ());
    assert_eq!(peak, 0);
}
