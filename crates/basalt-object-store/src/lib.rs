//! Basalt's data on object storage.
//!
//! The engine keeps store files, manifests and the catalog behind the
//! [`FileStore`] interface (`basalt_engine::fs`): files published once
//! (create-if-absent), then read by byte range, listed and deleted. This
//! crate puts that interface on object storage:
//!
//! - [`ObjectFileStore`] ([`store`]): the contract over any `object_store`
//!   store: S3, S3-compatible servers (MinIO, Ceph, moto, ...) and a local or
//!   shared directory;
//! - [`CachedFileStore`] ([`cache`]): a bounded on-disk cache of byte
//!   ranges in front of it, so a warm working set makes no requests and
//!   cached data stays readable while the store is unreachable;
//! - [`StorageUrl`] ([`url`]): `s3://bucket/prefix` and `file:///dir`;
//! - [`StorageConfig`] and [`open_storage`]: the `[storage]` settings of
//!   `basalt serve` and the one call that turns them into a file store for
//!   `Database::builder(..).file_store(..)`.
//!
//! With storage, the write-ahead log goes to the same store too
//! (`basalt_engine::wal::object`: group-committed log objects and writer
//! fencing; [`Storage::wal_options`] for `DatabaseBuilder::wal_in_file_store`),
//! so the data directory holds only the lock and caches. See
//! `docs/object-storage.md`.

// No crate of the workspace needs unsafe code; the compiler keeps it so.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::local::LocalFileSystem;
use object_store::{BackoffConfig, ClientConfigKey, ClientOptions, ObjectStore, RetryConfig};
use serde::{Deserialize, Serialize};

use basalt_engine::fs::FileStore;
use basalt_engine::layout;
use basalt_engine::wal::ObjectWalOptions;
use basalt_types::{Error, Result};

mod bridge;
pub mod cache;
pub mod store;
pub mod url;

pub use cache::{CachedFileStore, DiskCacheConfig, DiskCacheStats};
pub use store::{ObjectFileStore, ObjectStoreConfig};
pub use url::StorageUrl;

/// Where a database keeps its files, and how it reaches them: the
/// `[storage]` section of `basalt serve`'s configuration file. Every field
/// has a default; with no `url` the data stays in the local data
/// directory, as it always has.
///
/// Endpoint, region and credentials of S3 come from the usual AWS
/// environment variables (`AWS_ENDPOINT_URL`, `AWS_REGION`,
/// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
/// `AWS_ALLOW_HTTP`, ...); the fields here, when set, take precedence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageConfig {
    /// `s3://bucket[/prefix]` or `file:///dir`; unset: the local data
    /// directory.
    pub url: Option<String>,
    /// The S3 endpoint (an S3-compatible server's URL); requests then use
    /// path-style addressing (`endpoint/bucket/key`).
    pub endpoint: Option<String>,
    /// The S3 region (default `us-east-1`).
    pub region: Option<String>,
    /// The S3 access key id.
    pub access_key_id: Option<String>,
    /// The S3 secret access key.
    pub secret_access_key: Option<String>,
    /// Allow a plain-HTTP endpoint.
    pub allow_http: Option<bool>,
    /// The on-disk cache's directory (default: `cache` in the data
    /// directory).
    pub cache_dir: Option<PathBuf>,
    /// The on-disk cache's budget in bytes (default 1 GiB; 0 caches
    /// nothing).
    pub cache_bytes: u64,
    /// The unit the cache fetches and keeps (default 1 MiB).
    pub part_bytes: u64,
    /// How long one storage call may take, retries included, before it
    /// fails (default 30 000 ms); calls moving data get
    /// `min_bytes_per_sec` on top.
    pub request_timeout_ms: u64,
    /// The slowest transfer a call's bound allows for (default 1 MiB/s).
    pub min_bytes_per_sec: u64,
    /// The largest file written (in one `PUT`, held in memory until
    /// published); default 5 GiB, S3's limit for one `PUT`.
    pub max_object_bytes: u64,
    /// Threads of the storage client's runtime (default 2).
    pub runtime_threads: usize,
    /// Extra milliseconds the write-ahead log waits, after the first edit
    /// of a batch, before publishing it (see
    /// `ObjectWalOptions::group_commit_window`). Default 0: edits arriving
    /// while the previous object is written share the next one anyway; a
    /// window only saves `PUT` requests, at the cost of latency.
    pub wal_group_commit_ms: u64,
    /// How many write-ahead log objects may be on their way at once
    /// (`ObjectWalOptions::objects_in_flight`; default 1, at most
    /// `MAX_OBJECTS_IN_FLIGHT`): a batch is published beside the ones
    /// still in flight instead of waiting for them, and writers are
    /// acknowledged in sequence order. More in flight trade `PUT`s for
    /// throughput where a `PUT` mostly waits on the network. A shared
    /// directory whose log appends to segments writes one batch at a time
    /// whatever this says.
    pub wal_objects_in_flight: usize,
    /// On a shared directory (`file://`), whether the write-ahead log
    /// appends each batch to a segment file (one `write(2)` and one `stat`
    /// a batch) instead of creating one file per batch. Unset (the
    /// default): only where the directory's file system is a local one,
    /// whose processes all see a new name at once ([`store::appends_safely`]);
    /// on NFS, SMB or FUSE a cached lookup could hide a fence from a stale
    /// writer. Set `true` for a network file system mounted without lookup
    /// and attribute caching (NFS `lookupcache=none,noac`), `false` to
    /// keep one file per batch anywhere.
    pub wal_append: Option<bool>,
}

impl Default for StorageConfig {
    fn default() -> Self {
        let store = ObjectStoreConfig::default();
        StorageConfig {
            url: None,
            endpoint: None,
            region: None,
            access_key_id: None,
            secret_access_key: None,
            allow_http: None,
            cache_dir: None,
            cache_bytes: 1024 * 1024 * 1024,
            part_bytes: 1024 * 1024,
            request_timeout_ms: u64::try_from(store.request_timeout.as_millis())
                .unwrap_or(u64::MAX),
            min_bytes_per_sec: store.min_bytes_per_sec,
            max_object_bytes: store.max_object_bytes,
            runtime_threads: store.runtime_threads,
            wal_group_commit_ms: 0,
            wal_objects_in_flight: ObjectWalOptions::default().objects_in_flight,
            wal_append: None,
        }
    }
}

impl StorageConfig {
    /// The configuration of `url` with every other setting at its default.
    pub fn for_url(url: impl Into<String>) -> StorageConfig {
        StorageConfig {
            url: Some(url.into()),
            ..StorageConfig::default()
        }
    }

    fn store_config(&self) -> ObjectStoreConfig {
        ObjectStoreConfig {
            request_timeout: Duration::from_millis(self.request_timeout_ms.max(1)),
            min_bytes_per_sec: self.min_bytes_per_sec.max(1),
            max_object_bytes: self.max_object_bytes,
            runtime_threads: self.runtime_threads.max(1),
        }
    }
}

/// A database's files on object storage, as [`open_storage`] made it: the
/// cache in front of the object store.
#[derive(Debug, Clone)]
pub struct Storage {
    /// The storage URL, parsed.
    pub url: StorageUrl,
    /// The file store to hand to the database.
    pub files: Arc<CachedFileStore>,
    wal_options: ObjectWalOptions,
}

impl Storage {
    /// The file store, as the database builder takes it.
    pub fn file_store(&self) -> Arc<dyn FileStore> {
        Arc::clone(&self.files) as Arc<dyn FileStore>
    }

    /// The disk cache's counters.
    pub fn cache_stats(&self) -> DiskCacheStats {
        self.files.stats()
    }

    /// How the write-ahead log on this storage group-commits, for
    /// `DatabaseBuilder::wal_in_file_store`.
    pub fn wal_options(&self) -> ObjectWalOptions {
        self.wal_options.clone()
    }
}

/// Opens the storage `config` describes for the database in `data_dir`:
/// `None` when no URL is set (the data stays in the local data directory),
/// else an [`ObjectFileStore`] rooted at `data_dir` behind a
/// [`CachedFileStore`]. Nothing is requested from the store yet.
pub fn open_storage(config: &StorageConfig, data_dir: &Path) -> Result<Option<Storage>> {
    let Some(text) = &config.url else {
        return Ok(None);
    };
    let url = StorageUrl::parse(text)?;
    let objects = object_file_store(config, &url, data_dir)?;
    let cache_dir = config
        .cache_dir
        .clone()
        .unwrap_or_else(|| layout::object_cache_dir(data_dir));
    let files = CachedFileStore::open(
        Arc::new(objects),
        data_dir,
        DiskCacheConfig {
            dir: cache_dir,
            capacity_bytes: config.cache_bytes,
            part_bytes: config.part_bytes.max(1),
            identity: url.to_string(),
        },
    )?;
    Ok(Some(Storage {
        url,
        files: Arc::new(files),
        wal_options: ObjectWalOptions {
            group_commit_window: Duration::from_millis(config.wal_group_commit_ms),
            objects_in_flight: config.wal_objects_in_flight,
            ..ObjectWalOptions::default()
        },
    }))
}

/// The object store `url` names with no cache in front, rooted at `root`:
/// for tools that must read what the store holds, not a local copy (an
/// export reads each copy back from the store to check it arrived).
pub fn open_uncached(
    config: &StorageConfig,
    url: &StorageUrl,
    root: &Path,
) -> Result<Arc<dyn FileStore>> {
    Ok(Arc::new(object_file_store(config, url, root)?))
}

fn object_file_store(
    config: &StorageConfig,
    url: &StorageUrl,
    data_dir: &Path,
) -> Result<ObjectFileStore> {
    let store_config = config.store_config();
    let (store, prefix): (Arc<dyn ObjectStore>, String) = match url {
        StorageUrl::S3 { bucket, prefix } => (
            Arc::new(s3_store(config, bucket, &store_config)?),
            prefix.clone(),
        ),
        StorageUrl::File { dir } => {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
            let handle = |fsync: bool| {
                LocalFileSystem::new_with_prefix(dir)
                    .map_err(|e| Error::invalid(format!("storage {url}: {e}")))
                    // No empty directories left behind to show up in
                    // listings.
                    .map(|local| local.with_fsync(fsync).with_automatic_cleanup(true))
            };
            // Durable like the local data directory; the log's batches
            // may be published visible first (`publish_visible`), or
            // appended to segments where that is safe.
            let appends = config
                .wal_append
                .unwrap_or_else(|| store::appends_safely(dir));
            tracing::info!(dir = %dir.display(), appends,
                "shared directory: the log appends to segment files (else one file per batch)");
            return ObjectFileStore::on_shared_directory(
                Arc::new(handle(true)?),
                Arc::new(handle(false)?),
                dir,
                data_dir,
                url.to_string(),
                store_config,
                appends,
            );
        }
    };
    ObjectFileStore::new(store, data_dir, &prefix, url.to_string(), store_config)
}

/// An S3 client: the AWS environment first, then the configuration's
/// fields; path-style requests when an endpoint is set; retries and time
/// bounds from the configuration.
fn s3_store(
    config: &StorageConfig,
    bucket: &str,
    store_config: &ObjectStoreConfig,
) -> Result<object_store::aws::AmazonS3> {
    let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
    if let Some(endpoint) = &config.endpoint {
        builder = builder.with_endpoint(endpoint);
    }
    if let Some(region) = &config.region {
        builder = builder.with_region(region);
    }
    if let Some(key) = &config.access_key_id {
        builder = builder.with_access_key_id(key);
    }
    if let Some(secret) = &config.secret_access_key {
        builder = builder.with_secret_access_key(secret);
    }
    if builder
        .get_config_value(&AmazonS3ConfigKey::Endpoint)
        .is_some()
    {
        // S3-compatible servers answer on one host: bucket in the path.
        builder = builder.with_virtual_hosted_style_request(false);
    }
    // The client options are replaced whole below, so the environment's
    // AWS_ALLOW_HTTP is carried over by hand.
    let allow_http = config.allow_http.unwrap_or_else(|| {
        builder
            .get_config_value(&AmazonS3ConfigKey::Client(ClientConfigKey::AllowHttp))
            .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "true" | "1" | "yes" | "on"))
    });
    let timeout = store_config.request_timeout;
    let client = ClientOptions::new()
        .with_allow_http(allow_http)
        // A whole call is bounded by the store (request timeout plus the
        // payload's time); a per-request total would cut large transfers.
        .with_timeout_disabled()
        .with_connect_timeout(timeout.min(Duration::from_secs(10)))
        .with_read_timeout(timeout);
    let retry = RetryConfig {
        backoff: BackoffConfig::default(),
        max_retries: 10,
        retry_timeout: timeout,
    };
    builder
        .with_client_options(client)
        .with_retry(retry)
        .build()
        .map_err(|e| Error::invalid(format!("storage s3://{bucket}: {e}")))
}
