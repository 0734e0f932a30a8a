//! Malformed input never panics, never hangs and never allocates on a
//! garbage length: truncations at every offset, flipped bytes, absurd
//! lengths and random bytes all end in an error naming the file and an
//! offset (or, for a flip HBase's format does not protect, in the same
//! cells as the intact file).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use basalt_hfile::{HFileCell, HFileReader};
use basalt_types::Error;

fn fixture(name: &str) -> (PathBuf, Vec<u8>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let bytes = std::fs::read(&path).unwrap();
    (path, bytes)
}

/// Opens and reads every cell (and seeks and asks the Bloom filter), from
/// memory and again by ranges through a read-ahead window smaller than a
/// block: both must come to the same cells, or both fail.
fn read_all(name: &str, bytes: Vec<u8>) -> Result<Vec<HFileCell>, Error> {
    let bytes = bytes::Bytes::from(bytes);
    let whole = read_with(HFileReader::from_bytes(name, bytes.clone()));
    let source = bytes.clone();
    let ranged = read_with(HFileReader::from_ranges(
        name,
        bytes.len() as u64,
        700,
        Box::new(move |offset, len| {
            let start = offset as usize;
            Ok(source.slice(start..start + len))
        }),
    ));
    match (&whole, &ranged) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "{name}: read by ranges"),
        (Err(_), Err(e)) => assert_names_file_and_offset(e, name),
        (a, b) => panic!("{name}: from memory {a:?}, by ranges {b:?}"),
    }
    whole
}

fn read_with(opened: Result<HFileReader, Error>) -> Result<Vec<HFileCell>, Error> {
    let r = opened?;
    let cells: Vec<HFileCell> = r.cells().collect::<Result<_, _>>()?;
    if let Some(first) = cells.first() {
        r.seek(&first.row)?.collect::<Result<Vec<_>, _>>()?;
        r.might_contain(&first.row)?;
    }
    r.seek(b"row-00004")?.collect::<Result<Vec<_>, _>>()?;
    Ok(cells)
}

fn assert_names_file_and_offset(e: &Error, name: &str) {
    match e {
        Error::Corruption { path, message, .. } => {
            assert_eq!(path, Path::new(name), "{e}");
            assert!(!message.is_empty());
        }
        other => panic!("expected corruption, got {other}"),
    }
}

#[test]
fn a_file_truncated_at_any_offset_is_an_error() {
    for name in ["notags-nobloom.hfile", "fastdiff-lz4.hfile"] {
        let (_, bytes) = fixture(name);
        for n in 0..bytes.len() {
            let err = read_all(name, bytes[..n].to_vec())
                .expect_err(&format!("{name} truncated to {n} bytes read without error"));
            assert_names_file_and_offset(&err, name);
        }
    }
}

#[test]
fn a_flipped_byte_anywhere_is_an_error_or_changes_nothing() {
    for name in ["none-gz.hfile", "crc32-rowcol.hfile"] {
        let (_, bytes) = fixture(name);
        let intact = read_all(name, bytes.clone()).unwrap();
        for i in 0..bytes.len() {
            for mask in [0x01u8, 0x80] {
                let mut bad = bytes.clone();
                bad[i] ^= mask;
                match read_all(name, bad) {
                    Err(e) => assert_names_file_and_offset(&e, name),
                    Ok(cells) => assert_eq!(cells, intact, "{name}: flip {mask:#x} at {i}"),
                }
            }
        }
    }
}

#[test]
fn a_flipped_byte_in_a_data_block_fails_its_checksum_at_the_blocks_offset() {
    let name = "none-none.hfile";
    let (_, mut bytes) = fixture(name);
    bytes[100] ^= 0x10;
    let err = read_all(name, bytes).unwrap_err();
    match &err {
        Error::Corruption {
            offset, message, ..
        } => {
            assert_eq!(*offset, 0, "{err}");
            assert!(message.contains("checksum"), "{err}");
        }
        other => panic!("{other}"),
    }
    assert!(err.to_string().contains(name), "{err}");
}

fn set_u32(bytes: &mut [u8], at: usize, v: u32) {
    bytes[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

#[test]
fn absurd_block_sizes_are_refused_before_anything_is_allocated() {
    let name = "none-none.hfile";
    let (_, bytes) = fixture(name);
    // The first block's on-disk size, uncompressed size and data size.
    for (at, v) in [
        (8, 0x7fff_ffff),
        (12, 0x7fff_ffff),
        (29, 0x7fff_ffff),
        (8, u32::MAX),
        (29, 0),
    ] {
        let mut bad = bytes.clone();
        set_u32(&mut bad, at, v);
        let err = read_all(name, bad).unwrap_err();
        assert_names_file_and_offset(&err, name);
    }
    // The trailer's version: an unknown major version.
    let mut bad = bytes.clone();
    let n = bad.len();
    set_u32(&mut bad, n - 4, 0x0300_0009);
    let err = read_all(name, bad).unwrap_err();
    assert!(err.to_string().contains("major version 9"), "{err}");
}

#[test]
fn the_trailer_protobuf_with_absurd_fields_is_an_error() {
    let name = "none-none.hfile";
    let (_, bytes) = fixture(name);
    let trailer = bytes.len() - 4096;
    // The message starts after the magic and its one-byte length; every
    // varint in it set to its 10-byte maximum in turn overruns or lies.
    for i in trailer + 9..trailer + 40 {
        let mut bad = bytes.clone();
        bad[i] = 0xff;
        if let Err(e) = read_all(name, bad) {
            assert_names_file_and_offset(&e, name);
        }
    }
}

#[test]
fn random_bytes_of_any_length_are_an_error() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for len in [0usize, 1, 4, 33, 100, 4095, 4096, 4097, 10_000] {
        for _ in 0..20 {
            let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let err = read_all("random", bytes).unwrap_err();
            assert_names_file_and_offset(&err, "random");
        }
    }
}

#[test]
fn a_file_that_is_not_there_is_an_io_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing.hfile");
    match HFileReader::open(&path) {
        Err(Error::Io { path: p, .. }) => assert_eq!(p, path),
        other => panic!("{other:?}"),
    }
}
