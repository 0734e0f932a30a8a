//! The services a connection can name in its header, each a table of the
//! methods it serves. A method missing from its table is answered with
//! `DoNotRetryIOException` naming it (docs/native-rpc.md lists both).

use crate::call::Method;
use crate::{
    admin_service, client_service, cluster_service, master_service, peer_service, registry,
};

/// `ClientService`: reads, writes, scans, batches (region server).
pub const CLIENT_SERVICE: &str = "ClientService";
/// `MasterService`: DDL, namespaces, cluster status, switches (master).
pub const MASTER_SERVICE: &str = "MasterService";
/// `AdminService`: a region server's regions, flush, compact.
pub const ADMIN_SERVICE: &str = "AdminService";
/// `ClientMetaService`: how HBase 2.5+ clients find the cluster without
/// ZooKeeper (cluster id, masters, meta location).
pub const CLIENT_META_SERVICE: &str = "ClientMetaService";
/// `BasaltRegionService`: region calls between Basalt's own region
/// servers (docs/region-calls.md); HBase's clients never name it.
pub const BASALT_REGION_SERVICE: &str = peer_service::SERVICE;

/// Every service served, with its methods.
pub fn services() -> [(&'static str, &'static [Method]); 6] {
    [
        (CLIENT_SERVICE, client_service::METHODS),
        (MASTER_SERVICE, master_service::METHODS),
        (ADMIN_SERVICE, admin_service::METHODS),
        (CLIENT_META_SERVICE, registry::METHODS),
        (BASALT_REGION_SERVICE, peer_service::METHODS),
        (cluster_service::CLUSTER_SERVICE, cluster_service::METHODS),
    ]
}

/// The methods of `service`, `None` for a service not served.
pub fn methods(service: &str) -> Option<&'static [Method]> {
    services()
        .into_iter()
        .find(|(name, _)| *name == service)
        .map(|(_, methods)| methods)
}

/// The handler of `service.method`.
pub fn find(service: &str, method: &str) -> Option<Method> {
    methods(service)?.iter().find(|m| m.name == method).copied()
}
