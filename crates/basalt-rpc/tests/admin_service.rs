//! `AdminService` and `ClientMetaService` at the handler level: requests
//! encoded as HBase's clients send them, answers decoded as they read
//! them, over a database in a temporary directory.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use basalt::{ColumnFamilyDescriptor, Put, TableDescriptor};
use basalt_rpc::call::Call;
use basalt_rpc::meta::{meta_region_info, table_name_proto};
use basalt_rpc::proto::admin::{self as a, get_region_info_response::CompactionState};
use basalt_rpc::proto::hbase::{region_specifier::RegionSpecifierType, EmptyMsg, RegionSpecifier};
use basalt_rpc::proto::registry as r;
use basalt_rpc::services::{find, ADMIN_SERVICE, CLIENT_META_SERVICE};
use basalt_rpc::RpcError;
use prost::Message;

const NOT_SERVING: &str = "org.apache.hadoop.hbase.NotServingRegionException";
const NO_SUCH_FAMILY: &str = "org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException";

mod common;
use common::{server, Server};

impl Server {
    fn call<A: Message + Default>(
        &self,
        method: &str,
        request: &impl Message,
    ) -> Result<A, RpcError> {
        self.call_on(ADMIN_SERVICE, method, request)
    }

    fn create(&self, name: &str, splits: &[&'static [u8]]) {
        let splits: Vec<bytes::Bytes> = splits
            .iter()
            .map(|k| bytes::Bytes::from_static(k))
            .collect();
        self.db()
            .create_table_with_splits(
                TableDescriptor::new(name)
                    .family(ColumnFamilyDescriptor::new("f"))
                    .family(ColumnFamilyDescriptor::new("g")),
                &splits,
            )
            .unwrap();
    }

    fn put(&self, name: &str, row: &str) {
        self.db()
            .table(name)
            .unwrap()
            .put(&Put::new(row.to_string()).add("f", "q", "v"))
            .unwrap();
    }

    fn regions(&self, name: &str) -> Vec<basalt::RegionSummary> {
        self.db().list_regions(name).unwrap()
    }

    fn store_files(&self, name: &str) -> usize {
        self.regions(name).iter().map(|r| r.store_files()).sum()
    }
}

fn by_name(region: &basalt::RegionInfo) -> RegionSpecifier {
    RegionSpecifier {
        r#type: RegionSpecifierType::RegionName as i32,
        value: region.region_name().to_vec(),
    }
}

fn by_encoded_name(region: &basalt::RegionInfo) -> RegionSpecifier {
    RegionSpecifier {
        r#type: RegionSpecifierType::EncodedRegionName as i32,
        value: region.encoded_name().into_bytes(),
    }
}

fn meta_spec() -> RegionSpecifier {
    RegionSpecifier {
        r#type: RegionSpecifierType::RegionName as i32,
        value: b"hbase:meta,,1".to_vec(),
    }
}

#[test]
fn online_regions_are_the_system_tables_and_every_region_of_every_enabled_table() {
    let s = server();
    s.create("t1", &[b"k"]);
    s.create("t2", &[]);
    s.create("off", &[]);
    s.db().disable_table("off").unwrap();

    let online: a::GetOnlineRegionResponse = s.call("GetOnlineRegion", &EmptyMsg {}).unwrap();
    let regions = online.region_info;
    assert_eq!(regions.len(), 5, "{regions:?}");
    assert_eq!(regions[0], meta_region_info());
    // HBase 2's hbase:namespace, as HBase's region server lists it.
    assert_eq!(
        regions[1],
        basalt_rpc::meta::region_info_proto(&basalt_rpc::namespace_table::region_info())
    );
    let mut expected: Vec<_> = s.regions("t1");
    expected.extend(s.regions("t2"));
    for region in &expected {
        assert!(
            regions.contains(&basalt_rpc::meta::region_info_proto(&region.info)),
            "{region:?}"
        );
    }
    assert!(!regions
        .iter()
        .any(|r| r.table_name == Some(table_name_proto("off"))));
}

#[test]
fn region_info_names_the_region_by_full_or_encoded_name() {
    let s = server();
    s.create("t", &[b"k"]);
    let region = s.regions("t")[1].info.clone();
    for spec in [by_name(&region), by_encoded_name(&region)] {
        let answer: a::GetRegionInfoResponse = s
            .call(
                "GetRegionInfo",
                &a::GetRegionInfoRequest {
                    region: Some(spec),
                    compaction_state: Some(true),
                    best_split_row: None,
                },
            )
            .unwrap();
        let info = answer.region_info.unwrap();
        assert_eq!(info.region_id, region.id);
        assert_eq!(info.start_key.as_deref(), Some(&b"k"[..]));
        assert_eq!(answer.compaction_state, Some(CompactionState::None as i32));
        assert_eq!(answer.splittable, Some(true));
    }

    let meta: a::GetRegionInfoResponse = s
        .call(
            "GetRegionInfo",
            &a::GetRegionInfoRequest {
                region: Some(meta_spec()),
                compaction_state: None,
                best_split_row: None,
            },
        )
        .unwrap();
    assert_eq!(meta.region_info, Some(meta_region_info()));
    assert_eq!(meta.compaction_state, None, "not asked for");
}

#[test]
fn region_info_answers_the_best_split_row_of_flushed_data() {
    let s = server();
    s.create("t", &[]);
    for row in ["a", "b", "c", "d", "e", "f"] {
        s.put("t", row);
    }
    s.db().flush_table("t").unwrap();
    let region = s.regions("t")[0].info.clone();
    let answer: a::GetRegionInfoResponse = s
        .call(
            "GetRegionInfo",
            &a::GetRegionInfoRequest {
                region: Some(by_name(&region)),
                compaction_state: None,
                best_split_row: Some(true),
            },
        )
        .unwrap();
    let row = answer.best_split_row.expect("a split row");
    assert!(
        row.as_slice() > &b"a"[..] && row.as_slice() <= &b"f"[..],
        "{row:?}"
    );
}

#[test]
fn a_region_that_is_not_online_here_is_not_serving() {
    let s = server();
    s.create("t", &[]);
    let region = s.regions("t")[0].info.clone();
    s.db().disable_table("t").unwrap();
    let unknown = RegionSpecifier {
        r#type: RegionSpecifierType::RegionName as i32,
        value: b"t,,1.0123456789abcdef0123456789abcdef.".to_vec(),
    };
    for spec in [by_name(&region), unknown] {
        let error = s
            .call::<a::GetRegionInfoResponse>(
                "GetRegionInfo",
                &a::GetRegionInfoRequest {
                    region: Some(spec.clone()),
                    ..Default::default()
                },
            )
            .unwrap_err();
        assert_eq!(error.class, NOT_SERVING, "{error}");
        let error = s
            .call::<a::FlushRegionResponse>(
                "FlushRegion",
                &a::FlushRegionRequest {
                    region: Some(spec),
                    ..Default::default()
                },
            )
            .unwrap_err();
        assert_eq!(error.class, NOT_SERVING, "{error}");
        assert!(
            !error.do_not_retry,
            "the client re-reads hbase:meta and retries"
        );
    }
}

#[test]
fn flushing_a_region_writes_its_memstore_to_store_files() {
    let s = server();
    s.create("t", &[b"k"]);
    s.put("t", "a");
    s.put("t", "z");
    let left = s.regions("t")[0].info.clone();
    let answer: a::FlushRegionResponse = s
        .call(
            "FlushRegion",
            &a::FlushRegionRequest {
                region: Some(by_name(&left)),
                family: Some(b"f".to_vec()),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(answer.flushed, Some(true));
    assert!(answer.last_flush_time.unwrap() > 0);
    let files: Vec<usize> = s.regions("t").iter().map(|r| r.store_files()).collect();
    assert_eq!(files, [1, 0], "only the region named is flushed");
}

#[test]
fn a_major_compaction_of_a_region_merges_its_store_files() {
    let s = server();
    s.create("t", &[]);
    for row in ["a", "b"] {
        s.put("t", row);
        s.db().flush_table("t").unwrap();
    }
    assert_eq!(s.store_files("t"), 2);
    let region = s.regions("t")[0].info.clone();
    s.call::<EmptyMsg>(
        "CompactRegion",
        &a::CompactRegionRequest {
            region: Some(by_encoded_name(&region)),
            major: Some(true),
            family: None,
        },
    )
    .unwrap();
    assert_eq!(s.store_files("t"), 1);
}

#[test]
fn a_family_the_table_lacks_is_refused_by_flush_and_compact() {
    let s = server();
    s.create("t", &[]);
    let region = s.regions("t")[0].info.clone();
    let error = s
        .call::<a::FlushRegionResponse>(
            "FlushRegion",
            &a::FlushRegionRequest {
                region: Some(by_name(&region)),
                family: Some(b"nope".to_vec()),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert_eq!(error.class, NO_SUCH_FAMILY, "{error}");
    let error = s
        .call::<EmptyMsg>(
            "CompactRegion",
            &a::CompactRegionRequest {
                region: Some(by_name(&region)),
                major: Some(false),
                family: Some(b"nope".to_vec()),
            },
        )
        .unwrap_err();
    assert_eq!(error.class, NO_SUCH_FAMILY, "{error}");
}

#[test]
fn flushing_and_compacting_hbase_meta_do_nothing_and_succeed() {
    let s = server();
    let answer: a::FlushRegionResponse = s
        .call(
            "FlushRegion",
            &a::FlushRegionRequest {
                region: Some(meta_spec()),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(answer.flushed, Some(false));
    s.call::<EmptyMsg>(
        "CompactRegion",
        &a::CompactRegionRequest {
            region: Some(meta_spec()),
            major: Some(true),
            family: None,
        },
    )
    .unwrap();
}

#[test]
fn the_namespace_tables_region_is_described_by_either_name_and_has_nothing_to_flush() {
    let s = server();
    let info = basalt_rpc::namespace_table::region_info();
    for spec in [
        RegionSpecifier {
            r#type: RegionSpecifierType::RegionName as i32,
            value: info.region_name().to_vec(),
        },
        RegionSpecifier {
            r#type: RegionSpecifierType::EncodedRegionName as i32,
            value: info.encoded_name().into_bytes(),
        },
    ] {
        let answer: a::GetRegionInfoResponse = s
            .call(
                "GetRegionInfo",
                &a::GetRegionInfoRequest {
                    region: Some(spec.clone()),
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(
            answer.region_info,
            Some(basalt_rpc::meta::region_info_proto(&info))
        );
        assert_eq!(answer.splittable, Some(false));
        let flushed: a::FlushRegionResponse = s
            .call(
                "FlushRegion",
                &a::FlushRegionRequest {
                    region: Some(spec),
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(flushed.flushed, Some(false));
    }
}

#[test]
fn server_info_names_this_region_server() {
    let s = server();
    let answer: a::GetServerInfoResponse = s.call("GetServerInfo", &EmptyMsg {}).unwrap();
    let info = answer.server_info.unwrap();
    assert_eq!(info.server_name, Some(s.ctx.identity.region_server()));
    assert_eq!(info.webui_port, Some(0));
}

#[test]
fn region_loads_are_answered_for_one_table_or_for_all() {
    let s = server();
    s.create("t1", &[b"k"]);
    s.create("t2", &[]);
    s.put("t1", "a");
    // One read whose filter drops the row: a filtered read.
    let filter = basalt::Filter::parse("ValueFilter(=, 'binary:nothing')").unwrap();
    let got = s
        .db()
        .table("t1")
        .unwrap()
        .get(&basalt::Get::new("a").filter(filter))
        .unwrap();
    assert!(got.is_empty());
    let load = |table: Option<&str>| -> Vec<Vec<u8>> {
        let answer: a::GetRegionLoadResponse = s
            .call(
                "GetRegionLoad",
                &a::GetRegionLoadRequest {
                    table_name: table.map(table_name_proto),
                },
            )
            .unwrap();
        answer
            .region_loads
            .into_iter()
            .map(|l| l.region_specifier.unwrap().value)
            .collect()
    };
    let t1: Vec<Vec<u8>> = s
        .regions("t1")
        .iter()
        .map(|r| r.info.region_name().to_vec())
        .collect();
    assert_eq!(load(Some("t1")), t1);
    assert_eq!(
        load(None).len(),
        5,
        "hbase:meta, hbase:namespace, two of t1, one of t2"
    );
    assert_eq!(
        load(Some("hbase:namespace")),
        [basalt_rpc::namespace_table::region_info()
            .region_name()
            .to_vec()]
    );
    assert!(load(Some("missing")).is_empty());

    let answer: a::GetRegionLoadResponse = s
        .call(
            "GetRegionLoad",
            &a::GetRegionLoadRequest {
                table_name: Some(table_name_proto("t1")),
            },
        )
        .unwrap();
    let first = &answer.region_loads[0];
    assert_eq!(first.stores, Some(2));
    assert_eq!(first.write_requests_count, Some(1));
    assert_eq!(first.read_requests_count, Some(1));
    assert_eq!(first.filtered_read_requests_count, Some(1));
}

#[test]
fn methods_left_out_of_admin_service_are_not_in_the_table() {
    for method in [
        "OpenRegion",
        "CloseRegion",
        "StopServer",
        "RollWALWriter",
        "WarmupRegion",
    ] {
        assert!(find(ADMIN_SERVICE, method).is_none(), "{method}");
    }
}

#[test]
fn client_meta_service_answers_this_cluster() {
    let s = server();
    let id: r::GetClusterIdResponse = s
        .call_on(CLIENT_META_SERVICE, "GetClusterId", &EmptyMsg {})
        .unwrap();
    assert_eq!(id.cluster_id.as_deref(), Some("cluster-under-test"));

    let active: r::GetActiveMasterResponse = s
        .call_on(CLIENT_META_SERVICE, "GetActiveMaster", &EmptyMsg {})
        .unwrap();
    assert_eq!(active.server_name, Some(s.ctx.identity.master()));

    let masters: r::GetMastersResponse = s
        .call_on(CLIENT_META_SERVICE, "GetMasters", &EmptyMsg {})
        .unwrap();
    let [master] = masters.master_servers.as_slice() else {
        panic!("one master expected");
    };
    assert_eq!(master.server_name, Some(s.ctx.identity.master()));
    assert_eq!(master.is_active, Some(true));

    let locations: r::GetMetaRegionLocationsResponse = s
        .call_on(CLIENT_META_SERVICE, "GetMetaRegionLocations", &EmptyMsg {})
        .unwrap();
    let [location] = locations.meta_locations.as_slice() else {
        panic!("one location expected");
    };
    assert_eq!(location.region_info, Some(meta_region_info()));
    assert_eq!(location.server_name, Some(s.ctx.identity.region_server()));
    assert_eq!(location.seq_num, Some(0));

    let nodes: r::GetBootstrapNodesResponse = s
        .call_on(CLIENT_META_SERVICE, "GetBootstrapNodes", &EmptyMsg {})
        .unwrap();
    assert_eq!(nodes.server_name, [s.ctx.identity.region_server()]);
}

#[test]
fn the_meta_location_keeps_its_required_sequence_number_on_the_wire() {
    let s = server();
    let handler = find(CLIENT_META_SERVICE, "GetMetaRegionLocations")
        .unwrap()
        .handler;
    let mut call = Call::new(&s.ctx, &s.ctx.db, 1, Vec::new(), false);
    let bytes = handler(&mut call, &[]).unwrap();
    // Field 3 (seq_num, varint): tag byte 0x18 then 0, inside the location.
    assert!(bytes.windows(2).any(|w| w == [0x18, 0x00]), "{bytes:?}");
}
