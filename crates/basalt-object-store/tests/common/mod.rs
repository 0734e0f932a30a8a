//! What the object storage tests share: storage configurations for moto
//! and `file://`, and the FileStore contract suite.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use basalt_object_store::StorageConfig;

#[path = "../../../../test-support/moto.rs"]
pub mod moto;

pub mod contract;

/// A bucket name no other test of this process uses.
pub fn unique_bucket(test: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let mut name: String = test
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .take(40)
        .collect();
    name = name.trim_matches('-').to_owned();
    format!("{name}-{}-{n}", std::process::id())
}

/// Storage on moto, in a new bucket, under `prefix`; short time bounds so
/// the tests that stop moto finish soon.
pub fn moto_config(moto: &moto::MotoServer, test: &str, prefix: &str) -> StorageConfig {
    let bucket = unique_bucket(test);
    moto.create_bucket(&bucket);
    StorageConfig {
        url: Some(format!("s3://{bucket}/{prefix}")),
        endpoint: Some(moto.endpoint()),
        region: Some(moto::REGION.to_owned()),
        access_key_id: Some(moto::ACCESS_KEY.to_owned()),
        secret_access_key: Some(moto::SECRET_KEY.to_owned()),
        allow_http: Some(true),
        request_timeout_ms: 3_000,
        ..StorageConfig::default()
    }
}

/// Storage in the directory `dir` (`file://`).
pub fn file_config(dir: &Path) -> StorageConfig {
    StorageConfig::for_url(format!("file://{}", dir.display()))
}
