//! Garbage storage URLs and `[storage]` settings never panic: arbitrary
//! text and mutated valid URLs are either refused with an error naming
//! the URL or parse into a bucket and prefix (or directory) that print back
//! to an equivalent URL; `open_storage` on them fails cleanly or gives a
//! store without having made any request.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;

use basalt_object_store::{open_storage, StorageConfig, StorageUrl};

fn valid_urls() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("s3://bucket".to_string()),
        Just("s3://my-bucket/a/b/c".to_string()),
        Just("s3://b.c.d/prefix/".to_string()),
        Just("file:///tmp/shared".to_string()),
    ]
}

/// A valid URL with bytes changed, inserted or cut.
fn mutated() -> impl Strategy<Value = String> {
    (
        valid_urls(),
        prop::collection::vec((any::<usize>(), any::<char>(), 0u8..3), 1..6),
    )
        .prop_map(|(url, edits)| {
            let mut chars: Vec<char> = url.chars().collect();
            for (at, c, kind) in edits {
                let i = at % (chars.len() + 1);
                match kind {
                    0 if i < chars.len() => chars[i] = c,
                    1 => chars.insert(i, c),
                    _ => chars.truncate(i),
                }
            }
            chars.into_iter().collect()
        })
}

fn check(text: &str) {
    match StorageUrl::parse(text) {
        Ok(url) => {
            // What parses prints back to a URL that parses the same.
            let again = StorageUrl::parse(&url.to_string()).unwrap();
            assert_eq!(again, url, "{text:?}");
            if let StorageUrl::S3 { bucket, prefix } = &url {
                assert!((3..=63).contains(&bucket.len()));
                assert!(!prefix.starts_with('/') && !prefix.ends_with('/'));
                assert!(!prefix.split('/').any(|s| s == ".." || s == "."));
            }
        }
        Err(e) => assert!(e.to_string().contains("storage URL"), "{e}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics_the_url_parser(text in ".{0,80}") {
        check(&text);
    }

    #[test]
    fn mutated_urls_parse_or_are_refused(text in mutated()) {
        check(&text);
    }
}

#[test]
fn opening_garbage_s3_storage_fails_cleanly_or_makes_no_request() {
    let data = tempfile::tempdir().unwrap();
    for url in [
        "s3://",
        "s3://x",
        "s3://bucket/%",
        "s3://bucket/a//b",
        "gs://bucket",
        "",
    ] {
        let config = StorageConfig {
            // A port nothing listens on: opening must not contact it.
            endpoint: Some("http://127.0.0.1:9".into()),
            ..StorageConfig::for_url(url)
        };
        assert!(open_storage(&config, data.path()).is_err(), "{url:?}");
    }
    // A well-formed URL opens without a request, even with the endpoint
    // unreachable: requests start with the first file operation.
    let config = StorageConfig {
        endpoint: Some("http://127.0.0.1:9".into()),
        allow_http: Some(true),
        ..StorageConfig::for_url("s3://bucket/prefix")
    };
    assert!(open_storage(&config, data.path()).unwrap().is_some());
    // No URL: the local data directory, as always.
    assert!(open_storage(&StorageConfig::default(), data.path())
        .unwrap()
        .is_none());
}

#[test]
fn the_storage_settings_refuse_unknown_keys_and_wrong_types() {
    let parse = |text: &str| toml::from_str::<StorageConfig>(text);
    let config =
        parse("url = \"s3://bucket/p\"\ncache_bytes = 1024\nrequest_timeout_ms = 5\n").unwrap();
    assert_eq!(config.cache_bytes, 1024);
    assert_eq!(config.part_bytes, StorageConfig::default().part_bytes);
    assert!(parse("bucket = \"x\"").is_err());
    assert!(parse("cache_bytes = \"big\"").is_err());
    assert!(parse("cache_bytes = -1").is_err());
}
