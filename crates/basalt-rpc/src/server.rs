//! The server (work in progress in this change).

/// Server configuration.
#[derive(Debug, Clone, Default)]
pub struct RpcConfig {}

/// The server.
#[derive(Debug)]
pub struct RpcServer {}
