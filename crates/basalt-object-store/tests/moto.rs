//! moto, the S3-compatible server the tests use, really refuses a second
//! `If-None-Match: *` PUT of a key: the object store's create-if-absent
//! publication depends on it, so the other tests prove nothing without it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use object_store::aws::AmazonS3Builder;
use object_store::path::Path as Key;
use object_store::{ClientOptions, ObjectStore, ObjectStoreExt, PutMode, PutOptions};

mod common;
use common::{moto, unique_bucket};

#[test]
fn moto_refuses_a_second_conditional_put_of_a_key() {
    let Some(moto) = moto::start_or_skip("moto_refuses_a_second_conditional_put_of_a_key") else {
        return;
    };
    let bucket = unique_bucket("conditional");
    moto.create_bucket(&bucket);
    let store = AmazonS3Builder::new()
        .with_bucket_name(&bucket)
        .with_endpoint(moto.endpoint())
        .with_region(moto::REGION)
        .with_access_key_id(moto::ACCESS_KEY)
        .with_secret_access_key(moto::SECRET_KEY)
        .with_client_options(ClientOptions::new().with_allow_http(true))
        .build()
        .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let key = Key::from("k");
    let create = || PutOptions {
        mode: PutMode::Create,
        ..PutOptions::default()
    };
    runtime.block_on(async {
        store
            .put_opts(&key, "first".into(), create())
            .await
            .unwrap();
        let second = store.put_opts(&key, "second".into(), create()).await;
        assert!(
            matches!(
                second,
                Err(object_store::Error::AlreadyExists { .. })
                    | Err(object_store::Error::Precondition { .. })
            ),
            "moto accepted a second If-None-Match: * PUT: {second:?}; install a moto that \
             honours conditional writes (scripts/test pins one)"
        );
        let kept = store.get(&key).await.unwrap().bytes().await.unwrap();
        assert_eq!(&kept[..], b"first");
    });
}
