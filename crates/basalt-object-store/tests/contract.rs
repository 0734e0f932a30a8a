//! Every file store passes the same `FileStore` contract suite
//! (`common/contract.rs`): the local disk, memory, object storage over
//! `file://` and over a real S3-compatible server (moto), bare and behind
//! the disk cache.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use basalt_engine::fs::{FileStore, LocalFileStore, MemFileStore};
use basalt_object_store::{open_storage, StorageConfig};

mod common;
use common::{contract, file_config, moto, moto_config};

#[test]
fn the_local_store_keeps_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    contract::check_all(&LocalFileStore::new(), dir.path());
}

#[test]
fn the_memory_store_keeps_the_contract() {
    contract::check_all(&MemFileStore::new(), Path::new("/m"));
    contract::check_all(&MemFileStore::appending(), Path::new("/m"));
}

/// The object store behind `config` (with its disk cache when `cached`).
fn object_store(config: &StorageConfig, data_dir: &Path, cached: bool) -> Arc<dyn FileStore> {
    let storage = open_storage(config, data_dir).unwrap().unwrap();
    if cached {
        storage.file_store()
    } else {
        Arc::clone(storage.files.inner())
    }
}

#[test]
fn object_storage_in_a_directory_keeps_the_contract() {
    let shared = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let store = object_store(&file_config(shared.path()), data.path(), false);
    contract::check_all(store.as_ref(), data.path());
    // The keys are the paths below the data directory.
    assert!(shared.path().join("visible/sub/a").is_file());
    assert!(
        !data.path().join("visible").exists(),
        "nothing lands in the data directory"
    );
}

#[test]
fn object_storage_in_a_directory_whose_log_must_not_append_keeps_the_contract() {
    let shared = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let mut config = file_config(shared.path());
    config.wal_append = Some(false);
    let store = object_store(&config, data.path(), true);
    assert!(!store.can_append());
    contract::check_all(store.as_ref(), data.path());
}

#[test]
fn a_local_file_system_takes_appends_and_a_network_or_virtual_one_does_not() {
    // Linux keeps /dev/shm on tmpfs.
    let local = tempfile::tempdir_in("/dev/shm").unwrap();
    assert!(basalt_object_store::store::appends_safely(local.path()));
    assert!(!basalt_object_store::store::appends_safely(Path::new(
        "/proc"
    )));
    assert!(!basalt_object_store::store::appends_safely(
        &local.path().join("missing")
    ));
    let store = object_store(&file_config(local.path()), Path::new("/d"), true);
    assert!(store.can_append());
}

#[test]
fn object_storage_in_a_directory_behind_the_disk_cache_keeps_the_contract() {
    let shared = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let mut config = file_config(shared.path());
    config.part_bytes = 1000;
    let store = object_store(&config, data.path(), true);
    contract::check_all(store.as_ref(), data.path());
}

#[test]
fn object_storage_on_s3_keeps_the_contract() {
    let Some(moto) = moto::start_or_skip("object_storage_on_s3_keeps_the_contract") else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let config = moto_config(&moto, "contract", "some/prefix");
    let store = object_store(&config, data.path(), false);
    contract::check_all(store.as_ref(), data.path());
}

#[test]
fn object_storage_on_s3_behind_the_disk_cache_keeps_the_contract() {
    let Some(moto) =
        moto::start_or_skip("object_storage_on_s3_behind_the_disk_cache_keeps_the_contract")
    else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let mut config = moto_config(&moto, "contract-cached", "");
    config.part_bytes = 1000;
    let store = object_store(&config, data.path(), true);
    contract::check_all(store.as_ref(), data.path());
}

#[test]
fn paths_outside_the_root_or_with_odd_components_are_refused() {
    let shared = tempfile::tempdir().unwrap();
    let store = object_store(&file_config(shared.path()), Path::new("/data-dir"), false);
    for path in [
        "/elsewhere/f",
        "/data-dir/../f",
        "/data-dir/a/./b/../c",
        "/data-dir/fam#ily/f",
        "/data-dir/a\u{1}b",
    ] {
        let err = store.create(Path::new(path)).unwrap_err().to_string();
        assert!(err.contains("object storage"), "{path}: {err}");
    }
    assert!(store.list(Path::new("/elsewhere")).is_err());
}
