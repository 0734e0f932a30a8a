//! Block compression codecs, one crate each: `snap` (Snappy raw format),
//! `lz4_flex` (LZ4 block format, safe decoder), `zstd` (Zstandard frames,
//! level 3) and `flate2` with its Rust backend (raw DEFLATE for GZ).
//!
//! The block header stores the uncompressed length, so every decoder is
//! given an exact output size and a result of any other size is
//! corruption; none can be made to allocate more than the (already
//! bounded) declared length.

use std::io::{Read, Write};

use bytes::Bytes;

use basalt_types::{Compression, Error, Result};

use super::format::DecodeResult;

/// Zstandard level: its default, a good speed/ratio balance for flushes.
const ZSTD_LEVEL: i32 = 3;

/// The codec's id in a block header.
pub(crate) fn codec_id(c: Compression) -> u8 {
    match c {
        Compression::None => 0,
        Compression::Snappy => 1,
        Compression::Lz4 => 2,
        Compression::Zstd => 3,
        Compression::Gz => 4,
    }
}

fn codec_name(id: u8) -> &'static str {
    match id {
        0 => "none",
        1 => "snappy",
        2 => "lz4",
        3 => "zstd",
        4 => "gz",
        _ => "unknown",
    }
}

/// Appends `input` compressed with `codec` to `out`.
pub(crate) fn compress(codec: Compression, input: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let fail = |what: &str, e: &dyn std::fmt::Display| {
        Error::invalid(format!("{what} compression failed: {e}"))
    };
    match codec {
        Compression::None => out.extend_from_slice(input),
        Compression::Snappy => {
            let c = snap::raw::Encoder::new()
                .compress_vec(input)
                .map_err(|e| fail("snappy", &e))?;
            out.extend_from_slice(&c);
        }
        Compression::Lz4 => out.extend_from_slice(&lz4_flex::block::compress(input)),
        Compression::Zstd => {
            let c = zstd::bulk::compress(input, ZSTD_LEVEL).map_err(|e| fail("zstd", &e))?;
            out.extend_from_slice(&c);
        }
        Compression::Gz => {
            let mut enc = flate2::write::DeflateEncoder::new(out, flate2::Compression::default());
            enc.write_all(input).map_err(|e| fail("gz", &e))?;
            enc.finish().map_err(|e| fail("gz", &e))?;
        }
    }
    Ok(())
}

/// Decompresses a block payload that must come out exactly `len` bytes.
pub(crate) fn decompress(id: u8, input: &[u8], len: usize) -> DecodeResult<Bytes> {
    let name = codec_name(id);
    let bad = |e: &dyn std::fmt::Display| format!("{name} decompression failed: {e}");
    let out = match id {
        1 => {
            let n = snap::raw::decompress_len(input).map_err(|e| bad(&e))?;
            if n != len {
                return Err(format!(
                    "snappy block decompresses to {n} bytes, header says {len}"
                ));
            }
            let mut out = vec![0u8; len];
            snap::raw::Decoder::new()
                .decompress(input, &mut out)
                .map_err(|e| bad(&e))?;
            out
        }
        2 => {
            let mut out = vec![0u8; len];
            let n = lz4_flex::block::decompress_into(input, &mut out).map_err(|e| bad(&e))?;
            if n != len {
                return Err(format!(
                    "lz4 block decompresses to {n} bytes, header says {len}"
                ));
            }
            out
        }
        3 => {
            // One spare byte of capacity makes an over-long result an error
            // (reported below) instead of a silently truncated one.
            zstd::bulk::decompress(input, len + 1).map_err(|e| bad(&e))?
        }
        4 => {
            let mut out = Vec::with_capacity(len);
            flate2::read::DeflateDecoder::new(input)
                .take(len as u64 + 1)
                .read_to_end(&mut out)
                .map_err(|e| bad(&e))?;
            out
        }
        _ => return Err(format!("unknown compression codec id {id}")),
    };
    if out.len() != len {
        return Err(format!(
            "{name} block decompresses to {} bytes, header says {len}",
            out.len()
        ));
    }
    Ok(Bytes::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_codec_round_trips_and_rejects_garbage() {
        let input: Vec<u8> = (0..10_000u32).map(|i| (i % 97) as u8).collect();
        for &c in Compression::ALL {
            if c == Compression::None {
                continue;
            }
            let mut out = vec![];
            compress(c, &input, &mut out).unwrap();
            assert!(out.len() < input.len() / 2, "{c}");
            let id = codec_id(c);
            assert_eq!(&decompress(id, &out, input.len()).unwrap()[..], &input[..]);
            assert!(decompress(id, &out, input.len() - 1).is_err(), "{c}");
            assert!(decompress(id, &out, input.len() + 1).is_err(), "{c}");
            let garbage: Vec<u8> = (0..500u32).map(|i| (i * 7919 % 251) as u8).collect();
            let _ = decompress(id, &garbage, 10_000); // an error or not, never a panic
        }
        assert!(decompress(9, b"x", 1).is_err());
    }
}
