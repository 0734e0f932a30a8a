//! Block compression as HBase writes it: HBase hands a block's bytes to a
//! Hadoop codec, whose output stream frames the compressed bytes.
//!
//! - GZ (`ReusableStreamGzipCodec`): one gzip member (RFC 1952).
//! - SNAPPY, LZ4 (Hadoop's `SnappyCodec`, `Lz4Codec`) and the codecs of
//!   HBase's own `hbase-compression-*` modules frame with Hadoop's
//!   `BlockCompressorStream`: for each run of input, a 4-byte big-endian
//!   uncompressed length, then one or more chunks, each a 4-byte
//!   big-endian compressed length and that many bytes in the codec's raw
//!   format (Snappy's raw format; LZ4's block format, no frame), until the
//!   chunks have produced the run's length.
//! - ZSTD: Hadoop's `ZStandardCodec` (HBase's default) writes a plain
//!   Zstandard stream; HBase's own `ZstdCodec` uses the block framing
//!   above. A Zstandard frame's magic tells them apart.
//!
//! Every output is bounded by the block's uncompressed size from its
//! header, and must come out at exactly that size.

use std::io::Read;

use crate::cursor::{Cursor, Decode};

/// The compression algorithms, in HBase's `Compression.Algorithm` order
/// (the trailer stores the ordinal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Codec {
    /// 0: LZO (GPL codec, not shipped with HBase).
    Lzo,
    /// 1: gzip.
    Gz,
    /// 2: none.
    None,
    /// 3: Snappy.
    Snappy,
    /// 4: LZ4.
    Lz4,
    /// 5: bzip2.
    Bzip2,
    /// 6: Zstandard.
    Zstd,
    /// 7: LZMA (xz).
    Lzma,
    /// 8: Brotli.
    Brotli,
}

impl Codec {
    /// The algorithm with this ordinal.
    pub fn from_ordinal(ordinal: u32) -> Option<Codec> {
        Some(match ordinal {
            0 => Codec::Lzo,
            1 => Codec::Gz,
            2 => Codec::None,
            3 => Codec::Snappy,
            4 => Codec::Lz4,
            5 => Codec::Bzip2,
            6 => Codec::Zstd,
            7 => Codec::Lzma,
            8 => Codec::Brotli,
            _ => return None,
        })
    }

    /// HBase's name for it (as in a family's `COMPRESSION`).
    pub fn name(self) -> &'static str {
        match self {
            Codec::Lzo => "LZO",
            Codec::Gz => "GZ",
            Codec::None => "NONE",
            Codec::Snappy => "SNAPPY",
            Codec::Lz4 => "LZ4",
            Codec::Bzip2 => "BZIP2",
            Codec::Zstd => "ZSTD",
            Codec::Lzma => "LZMA",
            Codec::Brotli => "BROTLI",
        }
    }
}

/// The first bytes of a Zstandard frame (its magic, little-endian).
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Decompresses one block's on-disk data to exactly `expected` bytes.
pub(crate) fn decompress(codec: Codec, input: &[u8], expected: usize) -> Decode<Vec<u8>> {
    let out = match codec {
        Codec::None => input.to_vec(),
        Codec::Gz => stream(flate2::read::MultiGzDecoder::new(input), expected, "gzip")?,
        Codec::Snappy => hadoop_blocks(input, expected, snappy_chunk)?,
        Codec::Lz4 => hadoop_blocks(input, expected, lz4_chunk)?,
        Codec::Zstd if input.starts_with(&ZSTD_MAGIC) => zstd_stream(input, expected)?,
        Codec::Zstd => hadoop_blocks(input, expected, |chunk, room, out| {
            let before = out.len();
            let decoded = zstd_stream(chunk, room)?;
            out.extend_from_slice(&decoded);
            Ok(out.len() - before)
        })?,
        other => {
            return Err(format!(
                "compression {} is not supported by this reader",
                other.name()
            ))
        }
    };
    if out.len() != expected {
        return Err(format!(
            "{} data decompressed to {} bytes, the header says {expected}",
            codec.name(),
            out.len()
        ));
    }
    Ok(out)
}

/// Reads a decoder to its end, failing past `limit` bytes.
fn stream(reader: impl Read, limit: usize, what: &str) -> Decode<Vec<u8>> {
    let mut out = Vec::with_capacity(limit.min(1 << 20));
    reader
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("{what} stream: {e}"))?;
    if out.len() > limit {
        return Err(format!("{what} stream decompresses past {limit} bytes"));
    }
    Ok(out)
}

fn zstd_stream(input: &[u8], limit: usize) -> Decode<Vec<u8>> {
    let decoder =
        zstd::stream::read::Decoder::with_buffer(input).map_err(|e| format!("zstd stream: {e}"))?;
    stream(decoder, limit, "zstd")
}

/// Hadoop's `BlockCompressorStream` framing (see the module docs).
fn hadoop_blocks(
    input: &[u8],
    expected: usize,
    chunk_decoder: impl Fn(&[u8], usize, &mut Vec<u8>) -> Decode<usize>,
) -> Decode<Vec<u8>> {
    let mut c = Cursor::new(input);
    let mut out = Vec::with_capacity(expected.min(1 << 20));
    while !c.is_empty() {
        let at = c.pos();
        let raw = c.len32("uncompressed length of a compressed run")?;
        if raw == 0 {
            // Hadoop's end-of-stream mark for an empty input.
            break;
        }
        if raw > expected - out.len() {
            return Err(format!(
                "compressed run at byte {at} claims {raw} bytes, past the block's {expected}"
            ));
        }
        let goal = out.len() + raw;
        while out.len() < goal {
            let chunk_at = c.pos();
            let len = c.len32("compressed chunk length")?;
            let chunk = c.take(len, "compressed chunk")?;
            let got = chunk_decoder(chunk, goal - out.len(), &mut out)
                .map_err(|e| format!("chunk at byte {chunk_at}: {e}"))?;
            if got == 0 {
                return Err(format!("chunk at byte {chunk_at} decodes to nothing"));
            }
        }
    }
    Ok(out)
}

fn snappy_chunk(chunk: &[u8], room: usize, out: &mut Vec<u8>) -> Decode<usize> {
    let n = snap::raw::decompress_len(chunk).map_err(|e| format!("snappy: {e}"))?;
    if n > room {
        return Err(format!(
            "snappy chunk claims {n} bytes, {room} expected at most"
        ));
    }
    let start = out.len();
    out.resize(start + n, 0);
    let got = snap::raw::Decoder::new()
        .decompress(chunk, &mut out[start..])
        .map_err(|e| format!("snappy: {e}"))?;
    out.truncate(start + got);
    Ok(got)
}

fn lz4_chunk(chunk: &[u8], room: usize, out: &mut Vec<u8>) -> Decode<usize> {
    let start = out.len();
    out.resize(start + room, 0);
    let got =
        lz4_flex::block::decompress_into(chunk, &mut out[start..]).map_err(|e| format!("lz4: {e}"));
    match got {
        Ok(n) => {
            out.truncate(start + n);
            Ok(n)
        }
        Err(e) => {
            out.truncate(start);
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Frames `data` as Hadoop's BlockCompressorStream does, in runs of
    /// `run` bytes, with `compress` as the raw codec.
    fn framed(data: &[u8], run: usize, compress: impl Fn(&[u8]) -> Vec<u8>) -> Vec<u8> {
        let mut out = Vec::new();
        for piece in data.chunks(run) {
            out.extend_from_slice(&(piece.len() as u32).to_be_bytes());
            let c = compress(piece);
            out.extend_from_slice(&(c.len() as u32).to_be_bytes());
            out.extend_from_slice(&c);
        }
        out
    }

    fn sample() -> Vec<u8> {
        (0..5000u32).flat_map(|i| (i % 251).to_be_bytes()).collect()
    }

    #[test]
    fn snappy_and_lz4_runs_in_hadoop_framing_decode() {
        let data = sample();
        let s = framed(&data, 4096, |p| {
            snap::raw::Encoder::new().compress_vec(p).unwrap()
        });
        assert_eq!(decompress(Codec::Snappy, &s, data.len()).unwrap(), data);
        let l = framed(&data, 3000, lz4_flex::block::compress);
        assert_eq!(decompress(Codec::Lz4, &l, data.len()).unwrap(), data);
    }

    #[test]
    fn zstd_decodes_both_as_a_plain_stream_and_in_hadoop_framing() {
        let data = sample();
        let plain = zstd::bulk::compress(&data, 3).unwrap();
        assert_eq!(decompress(Codec::Zstd, &plain, data.len()).unwrap(), data);
        let framed = framed(&data, 7000, |p| zstd::bulk::compress(p, 1).unwrap());
        assert_eq!(decompress(Codec::Zstd, &framed, data.len()).unwrap(), data);
    }

    #[test]
    fn gzip_decodes_one_member() {
        let data = sample();
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(&data).unwrap();
        let gz = e.finish().unwrap();
        assert_eq!(decompress(Codec::Gz, &gz, data.len()).unwrap(), data);
    }

    #[test]
    fn output_longer_or_shorter_than_the_header_says_is_an_error() {
        let data = sample();
        let l = framed(&data, 3000, lz4_flex::block::compress);
        assert!(decompress(Codec::Lz4, &l, data.len() - 1).is_err());
        assert!(decompress(Codec::Lz4, &l, data.len() + 1).is_err());
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(&data).unwrap();
        let gz = e.finish().unwrap();
        assert!(decompress(Codec::Gz, &gz, 10).is_err());
    }

    #[test]
    fn a_run_claiming_more_than_the_block_is_refused_before_decoding() {
        let mut bad = (u32::MAX >> 1).to_be_bytes().to_vec();
        bad.extend_from_slice(&[0, 0, 0, 1, 0]);
        let err = decompress(Codec::Snappy, &bad, 100).unwrap_err();
        assert!(err.contains("past the block"), "{err}");
    }

    #[test]
    fn codecs_without_a_decoder_say_so() {
        let err = decompress(Codec::Bzip2, b"x", 1).unwrap_err();
        assert!(err.contains("BZIP2"), "{err}");
    }
}
