//! HBase's bulk load calls over a real socket, as HBase's
//! `BulkLoadHFilesTool` makes them: `PrepareBulkLoad` for a table named
//! in the default namespace, `BulkLoadHFile` with a `file:` path per
//! family into the region the file fits, `CleanupBulkLoad`; a file that
//! does not fit its region is refused and loads nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use basalt::{ColumnFamilyDescriptor, Get, TableDescriptor};
use basalt_rpc::proto::client::{
    bulk_load_h_file_request::FamilyPath, BulkLoadHFileRequest, BulkLoadHFileResponse,
    CleanupBulkLoadRequest, PrepareBulkLoadRequest, PrepareBulkLoadResponse,
};
use basalt_rpc::proto::hbase::TableName;
use bytes::Bytes;

use common::{client, region};

fn fixture() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../basalt-hfile/tests/fixtures/none-none.hfile")
}

fn start(split: Option<&'static [u8]>) -> common::Fixture {
    common::start_serving(move |db| {
        let descriptor =
            TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("cf").max_versions(10));
        match split {
            Some(split) => db
                .create_table_with_splits(descriptor, &[Bytes::from_static(split)])
                .unwrap(),
            None => db.create_table(descriptor).unwrap(),
        }
    })
}

fn region_name(f: &common::Fixture) -> Vec<u8> {
    let regions = f.db.list_regions("t").unwrap();
    regions[0].info.region_name().to_vec()
}

fn load_request(name: &[u8], token: &str) -> BulkLoadHFileRequest {
    BulkLoadHFileRequest {
        region: region(name),
        family_path: vec![FamilyPath {
            family: b"cf".to_vec(),
            path: format!("file:{}", fixture().display()),
        }],
        assign_seq_num: Some(true),
        bulk_token: Some(token.to_string()),
        copy_file: Some(false),
    }
}

#[test]
fn hbases_bulk_load_calls_load_a_file_into_its_region() {
    let f = start(None);
    let mut c = client(&f, true);
    // HBase's client names the table with its namespace.
    let prepared: PrepareBulkLoadResponse = c
        .call(
            "PrepareBulkLoad",
            &PrepareBulkLoadRequest {
                table_name: Some(TableName {
                    namespace: b"default".to_vec(),
                    qualifier: b"t".to_vec(),
                }),
                region: None,
            },
            &[],
        )
        .unwrap()
        .decode()
        .unwrap();
    assert!(!prepared.bulk_token.is_empty());
    let name = region_name(&f);
    let loaded: BulkLoadHFileResponse = c
        .call(
            "BulkLoadHFile",
            &load_request(&name, &prepared.bulk_token),
            &[],
        )
        .unwrap()
        .decode()
        .unwrap();
    assert!(loaded.loaded);
    c.call(
        "CleanupBulkLoad",
        &CleanupBulkLoadRequest {
            bulk_token: prepared.bulk_token,
            region: None,
        },
        &[],
    )
    .unwrap();
    // Every row of the file reads back.
    let reader = basalt_hfile::HFileReader::open(fixture()).unwrap();
    let first = reader.cells().next().unwrap().unwrap();
    let table = f.db.table("t").unwrap();
    assert!(!table.get(&Get::new(first.row)).unwrap().cells.is_empty());
    let stores = &f.db.list_regions("t").unwrap()[0].stores;
    assert_eq!(stores.iter().map(|(_, s)| s.files).sum::<usize>(), 1);
}

#[test]
fn a_file_that_does_not_fit_its_region_is_refused_and_loads_nothing() {
    // The fixture's rows start with "r": a region ending at "r\x00\xff\x05"
    // holds only part of them.
    let f = start(Some(b"r\x00\xff\x05"));
    let mut c = client(&f, true);
    let name = region_name(&f);
    let refused = c
        .call("BulkLoadHFile", &load_request(&name, "t1"), &[])
        .unwrap_err()
        .to_string();
    assert!(refused.contains("does not fit"), "{refused}");
    for summary in f.db.list_regions("t").unwrap() {
        assert_eq!(
            summary.stores.iter().map(|(_, s)| s.files).sum::<usize>(),
            0
        );
    }
    let remote = c.call(
        "BulkLoadHFile",
        &BulkLoadHFileRequest {
            family_path: vec![FamilyPath {
                family: b"cf".to_vec(),
                path: "hdfs://namenode/x".into(),
            }],
            ..load_request(&name, "t2")
        },
        &[],
    );
    assert!(remote.unwrap_err().to_string().contains("own machine"));
}
