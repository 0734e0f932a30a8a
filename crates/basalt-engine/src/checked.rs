//! Checked small files: a header line naming the kind (magic), the format
//! version, the body's crc32c (8 hex digits) and its length, then the
//! body. Store manifests, snapshot manifests and export plans are written
//! so; [`unframe`] refuses any defect with the byte offset where it is.

/// A checked file's bytes: the header line, then `body`.
pub fn frame(magic: &str, version: u32, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "{magic} {version} {:08x} {}\n",
        crc32c::crc32c(body),
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// What [`unframe`] found in a well-formed checked file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Framed<'a> {
    /// The body's offset in the file.
    pub body_at: u64,
    /// The body, its length and checksum verified.
    pub body: &'a [u8],
    /// The format version the header names (one of those asked for).
    pub version: u32,
}

/// The body of a checked file written by [`frame`], once its magic, a
/// format version among `readable`, its length and its checksum hold.
/// Untrusted input: a defect is `(offset, what is wrong)`, never a panic;
/// `what` names the kind of file in the message.
pub fn unframe<'a>(
    bytes: &'a [u8],
    magic: &str,
    readable: &[u32],
    what: &str,
) -> Result<Framed<'a>, (u64, String)> {
    let newline = bytes
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(|| (0, "missing header line".to_string()))?;
    let header = std::str::from_utf8(&bytes[..newline])
        .map_err(|e| (e.valid_up_to() as u64, "header is not text".to_string()))?;
    // At most four fields: a header of many spaces must not become a
    // vector of many empty fields.
    let mut fields = header.splitn(5, ' ');
    let (Some(found_magic), Some(format), Some(crc), Some(len), None) = (
        fields.next(),
        fields.next(),
        fields.next(),
        fields.next(),
        fields.next(),
    ) else {
        return Err((0, format!("malformed header '{}'", header.escape_debug())));
    };
    if found_magic != magic {
        return Err((0, format!("bad magic '{}'", found_magic.escape_debug())));
    }
    let version = readable
        .iter()
        .copied()
        .find(|v| v.to_string() == format)
        .ok_or_else(|| {
            (
                magic.len() as u64 + 1,
                format!("unsupported {what} format {}", format.escape_debug()),
            )
        })?;
    let body_at = newline as u64 + 1;
    let body = &bytes[newline + 1..];
    if len.parse::<usize>().ok() != Some(body.len()) {
        return Err((
            body_at,
            format!(
                "body is {} bytes, header says {}",
                body.len(),
                len.escape_debug()
            ),
        ));
    }
    if u32::from_str_radix(crc, 16).ok() != Some(crc32c::crc32c(body)) {
        return Err((body_at, "body checksum mismatch".into()));
    }
    Ok(Framed {
        body_at,
        body,
        version,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_framed_body_comes_back_and_every_changed_byte_is_refused() {
        let bytes = frame("TEST-MAGIC", 2, b"{\"a\":1}");
        let framed = unframe(&bytes, "TEST-MAGIC", &[1, 2], "test file").unwrap();
        assert_eq!((framed.body, framed.version), (&b"{\"a\":1}"[..], 2));
        // The low bit of each byte: a hex digit's case (bit 5) is no change
        // of its value.
        for at in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[at] ^= 0x01;
            assert!(
                unframe(&bad, "TEST-MAGIC", &[1, 2], "test file").is_err(),
                "byte {at}"
            );
        }
    }

    #[test]
    fn an_unreadable_version_is_named_with_its_offset() {
        let bytes = frame("M", 9, b"x");
        let (offset, why) = unframe(&bytes, "M", &[1, 2], "test file").unwrap_err();
        assert_eq!(
            (offset, why.as_str()),
            (2, "unsupported test file format 9")
        );
    }
}
