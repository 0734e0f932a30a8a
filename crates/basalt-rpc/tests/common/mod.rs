//! The handler-level fixture the service tests share: a context over a
//! fresh database, and calls by service and method name.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::sync::Arc;

use basalt::Database;
use basalt_rpc::call::Call;
use basalt_rpc::services::find;
use basalt_rpc::{Identity, RpcContext, RpcError, RpcLimits};
use prost::Message;

/// A server over a fresh database; the context goes before the directory.
pub struct Server {
    pub ctx: RpcContext,
    _dir: tempfile::TempDir,
}

pub fn server() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("db")).unwrap();
    let identity = Identity {
        host: "basalt.test".into(),
        master_port: 16000,
        region_server_port: 16020,
        start_code: 1_700_000_000_000,
        cluster_id: "cluster-under-test".into(),
    };
    Server {
        ctx: RpcContext::new(Arc::new(db), identity, RpcLimits::default()),
        _dir: dir,
    }
}

impl Server {
    pub fn db(&self) -> &Database {
        &self.ctx.db
    }

    pub fn call_on<A: Message + Default>(
        &self,
        service: &str,
        method: &str,
        request: &impl Message,
    ) -> Result<A, RpcError> {
        let handler = find(service, method)
            .unwrap_or_else(|| panic!("{service}.{method} is not served"))
            .handler;
        let mut call = Call::new(&self.ctx, &self.ctx.db, 1, Vec::new(), false);
        let answer = handler(&mut call, &request.encode_to_vec())?;
        Ok(A::decode(&answer[..]).unwrap())
    }
}

/// A real `basalt serve`-style RPC server on free loopback ports over a
/// fresh database, for the tests that talk over a socket.
pub struct Fixture {
    _dir: tempfile::TempDir,
    pub db: Database,
    pub server: basalt_rpc::RpcServer,
}

/// Starts a [`Fixture`]; `prepare` sets the database up before it serves.
pub fn start_serving(prepare: impl FnOnce(&Database)) -> Fixture {
    start_serving_with(basalt_rpc::RpcConfig::default(), prepare)
}

/// [`start_serving`] with `config`'s limits (its ports are chosen free).
pub fn start_serving_with(
    config: basalt_rpc::RpcConfig,
    prepare: impl FnOnce(&Database),
) -> Fixture {
    start_serving_secured(config, basalt::SecurityOptions::default(), prepare)
}

/// [`start_serving_with`] under `security` (access control).
pub fn start_serving_secured(
    config: basalt_rpc::RpcConfig,
    security: basalt::SecurityOptions,
    prepare: impl FnOnce(&Database),
) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let mut options = basalt::Options::new(dir.path());
    options.security = security;
    let db = Database::open_with(options).unwrap();
    prepare(&db);
    let config = basalt_rpc::RpcConfig {
        enabled: true,
        master_port: 0,
        region_server_port: 0,
        ..config
    };
    let server = basalt_rpc::RpcServer::bind(&config)
        .unwrap()
        .serve(db.clone(), "test-cluster".into())
        .unwrap();
    Fixture {
        _dir: dir,
        db,
        server,
    }
}

/// A `ClientService` connection to the fixture's region server port.
pub fn client(f: &Fixture, cell_blocks: bool) -> basalt_rpc::client::RpcClient {
    basalt_rpc::client::RpcClient::connect(
        f.server.region_server_addr(),
        "ClientService",
        cell_blocks,
    )
    .unwrap()
}

/// A region specifier naming `name`.
pub fn region(name: &[u8]) -> Option<basalt_rpc::proto::hbase::RegionSpecifier> {
    Some(basalt_rpc::proto::hbase::RegionSpecifier {
        r#type: basalt_rpc::proto::hbase::region_specifier::RegionSpecifierType::RegionName as i32,
        value: name.to_vec(),
    })
}
