//! The network gateways that serve a database (Thrift1, Thrift2, REST,
//! native RPC), as the process that runs them announces them, and the
//! parts they share: [`scanners`], the one table of open scanners, and
//! [`text`], the escapings and percent-coding.
//!
//! The database does not start gateways: `basalt serve` binds each one and
//! then registers its address here, so that `status` and `list_regions`
//! (through the admin API) can tell a user which ports reach this server,
//! and an embedded database, which has none, says so.

use std::fmt;
use std::net::SocketAddr;

use parking_lot::RwLock;

pub mod scanners;
pub mod text;

/// One gateway: the protocol it speaks and the address it listens on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gateway {
    /// The protocol, as users name it: `thrift`, `thrift2`, `rest`.
    pub protocol: String,
    /// The address the gateway accepts connections on.
    pub address: SocketAddr,
}

impl fmt::Display for Gateway {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.protocol, self.address)
    }
}

/// The registry: gateways in the order they were registered (the order
/// `basalt serve` starts them, so listings are stable).
#[derive(Debug, Default)]
pub(crate) struct Gateways {
    list: RwLock<Vec<Gateway>>,
}

impl Gateways {
    /// Records a gateway; registering the same protocol again replaces its
    /// address (a gateway restarted on another port is one gateway).
    pub(crate) fn register(&self, protocol: &str, address: SocketAddr) {
        let mut list = self.list.write();
        match list.iter_mut().find(|g| g.protocol == protocol) {
            Some(existing) => existing.address = address,
            None => list.push(Gateway {
                protocol: protocol.to_string(),
                address,
            }),
        }
    }

    /// Forgets a gateway that stopped serving.
    pub(crate) fn deregister(&self, protocol: &str) {
        self.list.write().retain(|g| g.protocol != protocol);
    }

    pub(crate) fn list(&self) -> Vec<Gateway> {
        self.list.read().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    #[test]
    fn gateways_are_listed_in_registration_order() {
        let g = Gateways::default();
        g.register("thrift", addr(9090));
        g.register("rest", addr(8080));
        let names: Vec<String> = g.list().iter().map(|g| g.to_string()).collect();
        assert_eq!(names, ["thrift 127.0.0.1:9090", "rest 127.0.0.1:8080"]);
    }

    #[test]
    fn registering_a_protocol_again_moves_it_and_deregistering_removes_it() {
        let g = Gateways::default();
        g.register("thrift", addr(9090));
        g.register("rest", addr(8080));
        g.register("thrift", addr(9999));
        assert_eq!(g.list()[0].address, addr(9999));
        assert_eq!(g.list().len(), 2);
        g.deregister("thrift");
        assert_eq!(g.list().len(), 1);
        assert_eq!(g.list()[0].protocol, "rest");
    }
}
