//! Storage URLs: where a database keeps its files.
//!
//! Two forms are accepted, nothing else:
//!
//! - `s3://BUCKET[/PREFIX]`: an S3 bucket (or a bucket of any S3-compatible
//!   server), every key under `PREFIX/` when one is given.
//! - `file:///ABSOLUTE/DIR`: a directory, typically a shared mount; it is
//!   created when missing.
//!
//! Parsing is strict and names what is wrong: a bucket outside S3's naming
//! rules, an empty, `.` or `..` prefix segment, a control character, a
//! relative file path. Percent-escapes are not decoded (a `%` is refused
//! rather than guessed at), so the text of the URL is exactly the bucket
//! and the key prefix used.

use std::fmt;
use std::path::PathBuf;

use basalt_types::{Error, Result};

/// A parsed storage URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StorageUrl {
    /// `s3://bucket/prefix`.
    S3 {
        /// The bucket.
        bucket: String,
        /// The key prefix without leading or trailing `/` (empty: the
        /// bucket's root).
        prefix: String,
    },
    /// `file:///dir`.
    File {
        /// The absolute directory.
        dir: PathBuf,
    },
}

/// Longest URL accepted; a real one is far shorter.
const MAX_URL_LEN: usize = 2048;

impl StorageUrl {
    /// Parses a storage URL (see the module docs for the forms).
    pub fn parse(text: &str) -> Result<StorageUrl> {
        let bad = |why: &str| Error::invalid(format!("storage URL {text:?}: {why}"));
        if text.len() > MAX_URL_LEN {
            return Err(bad(&format!("longer than {MAX_URL_LEN} bytes")));
        }
        if text.chars().any(char::is_control) {
            return Err(bad("contains a control character"));
        }
        if text.contains('%') {
            return Err(bad(
                "percent-escapes are not supported; write the name as it is",
            ));
        }
        if let Some(rest) = text.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            check_bucket(bucket).map_err(|why| bad(&why))?;
            let prefix = prefix.trim_end_matches('/');
            if !prefix.is_empty() {
                for segment in prefix.split('/') {
                    check_segment(segment).map_err(|why| bad(&why))?;
                }
            }
            Ok(StorageUrl::S3 {
                bucket: bucket.to_owned(),
                prefix: prefix.to_owned(),
            })
        } else if let Some(rest) = text.strip_prefix("file://") {
            if !rest.starts_with('/') {
                return Err(bad(
                    "a file URL needs an absolute path: file:///dir (three slashes)",
                ));
            }
            let dir = rest.trim_end_matches('/');
            if dir.is_empty() {
                return Err(bad(
                    "the file system's root cannot be the storage directory",
                ));
            }
            for segment in dir[1..].split('/') {
                check_segment(segment).map_err(|why| bad(&why))?;
            }
            Ok(StorageUrl::File {
                dir: PathBuf::from(dir),
            })
        } else {
            Err(bad("expected s3://bucket[/prefix] or file:///dir"))
        }
    }
}

impl fmt::Display for StorageUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StorageUrl::S3 { bucket, prefix } if prefix.is_empty() => write!(f, "s3://{bucket}"),
            StorageUrl::S3 { bucket, prefix } => write!(f, "s3://{bucket}/{prefix}"),
            StorageUrl::File { dir } => write!(f, "file://{}", dir.display()),
        }
    }
}

/// S3's bucket naming rules: 3 to 63 characters of lower-case letters,
/// digits, `.` and `-`, starting and ending with a letter or digit.
fn check_bucket(bucket: &str) -> std::result::Result<(), String> {
    if bucket.is_empty() {
        return Err("no bucket name".into());
    }
    if !(3..=63).contains(&bucket.len()) {
        return Err(format!(
            "bucket name {bucket:?} must be 3 to 63 characters long"
        ));
    }
    let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-';
    if !bucket.chars().all(allowed) {
        return Err(format!(
            "bucket name {bucket:?} may only hold lower-case letters, digits, '.' and '-'"
        ));
    }
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if !edge(bucket.chars().next()) || !edge(bucket.chars().last()) {
        return Err(format!(
            "bucket name {bucket:?} must start and end with a letter or digit"
        ));
    }
    Ok(())
}

/// One segment of a key prefix or directory: not empty (no `//`), not `.`
/// or `..` (they would name another place).
fn check_segment(segment: &str) -> std::result::Result<(), String> {
    match segment {
        "" => Err("empty path segment ('//')".into()),
        "." | ".." => Err(format!("path segment {segment:?} is not allowed")),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn s3_urls_name_a_bucket_and_a_prefix() {
        assert_eq!(
            StorageUrl::parse("s3://my-bucket/a/b/").unwrap(),
            StorageUrl::S3 {
                bucket: "my-bucket".into(),
                prefix: "a/b".into()
            }
        );
        assert_eq!(
            StorageUrl::parse("s3://my.bucket").unwrap(),
            StorageUrl::S3 {
                bucket: "my.bucket".into(),
                prefix: String::new()
            }
        );
        assert_eq!(
            StorageUrl::parse("s3://bkt/p").unwrap().to_string(),
            "s3://bkt/p"
        );
    }

    #[test]
    fn file_urls_name_an_absolute_directory() {
        assert_eq!(
            StorageUrl::parse("file:///shared/dir/").unwrap(),
            StorageUrl::File {
                dir: PathBuf::from("/shared/dir")
            }
        );
        assert_eq!(
            StorageUrl::parse("file:///shared/dir").unwrap().to_string(),
            "file:///shared/dir"
        );
    }

    #[test]
    fn malformed_urls_are_refused_with_the_reason() {
        for (url, why) in [
            ("", "expected s3://"),
            ("http://bucket/x", "expected s3://"),
            ("s3://", "no bucket"),
            ("s3:///prefix", "no bucket"),
            ("s3://ab", "3 to 63"),
            ("s3://Upper", "lower-case"),
            ("s3://-bucket", "start and end"),
            ("s3://bucket//x", "empty path segment"),
            ("s3://bucket/../x", "not allowed"),
            ("s3://bucket/a%2Fb", "percent-escapes"),
            ("s3://bucket/a\nb", "control character"),
            ("file://relative/dir", "absolute path"),
            ("file:///", "root"),
            ("file:///a/./b", "not allowed"),
        ] {
            let err = StorageUrl::parse(url).unwrap_err().to_string();
            assert!(err.contains(why), "{url:?}: {err}");
        }
    }
}
