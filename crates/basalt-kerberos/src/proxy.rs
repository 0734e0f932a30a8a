//! Proxy users: which authenticated users may act for others, from where
//! (Hadoop's `hadoop.proxyuser.<user>.hosts|users|groups`, which HBase's
//! Thrift and REST gateways and its RPC server obey for `doAs`).
//!
//! A real user may act as another only when its rule names the other
//! user (or one of that user's groups, or `*`) **and** the request comes
//! from one of the rule's hosts (an address, a CIDR block, a host name
//! resolved when the rules are built, or `*`). No rule: no impersonation.

use std::collections::BTreeMap;
use std::net::{IpAddr, ToSocketAddrs};

use serde::{Deserialize, Serialize};

use crate::KerberosError;

/// One real user's rule (`[security.proxy_users.<user>]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProxyUserSettings {
    /// Where requests acting for others may come from: addresses, CIDR
    /// blocks (`10.0.0.0/8`), host names, or `*`.
    pub hosts: Vec<String>,
    /// Users it may act as (`*`: any).
    pub users: Vec<String>,
    /// Groups whose members it may act as (`*`: any).
    pub groups: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostRule {
    Any,
    Block { network: IpAddr, prefix: u8 },
}

impl HostRule {
    fn admits(&self, address: IpAddr) -> bool {
        match self {
            HostRule::Any => true,
            HostRule::Block { network, prefix } => {
                let address = canonical(address);
                match (network, address) {
                    (IpAddr::V4(net), IpAddr::V4(addr)) => {
                        let mask = u32::MAX.checked_shl(32 - u32::from(*prefix)).unwrap_or(0);
                        u32::from(*net) & mask == u32::from(addr) & mask
                    }
                    (IpAddr::V6(net), IpAddr::V6(addr)) => {
                        let mask = u128::MAX.checked_shl(128 - u32::from(*prefix)).unwrap_or(0);
                        u128::from(*net) & mask == u128::from(addr) & mask
                    }
                    _ => false,
                }
            }
        }
    }
}

/// An IPv4 address carried as IPv6 (`::ffff:a.b.c.d`) is the IPv4 one.
fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

#[derive(Debug, Clone)]
struct Compiled {
    hosts: Vec<HostRule>,
    users: Vec<String>,
    groups: Vec<String>,
}

/// The proxy-user rules, compiled (host names resolved).
#[derive(Debug, Clone, Default)]
pub struct ProxyUsers {
    rules: BTreeMap<String, Compiled>,
}

impl ProxyUsers {
    /// Compiles the rules, keyed by the real user's short name. A host
    /// that is no address, block or resolvable name is refused.
    pub fn new(
        settings: &BTreeMap<String, ProxyUserSettings>,
    ) -> Result<ProxyUsers, KerberosError> {
        let mut rules = BTreeMap::new();
        for (user, rule) in settings {
            let mut hosts = Vec::new();
            for host in &rule.hosts {
                hosts.extend(host_rules(user, host.trim())?);
            }
            rules.insert(
                user.clone(),
                Compiled {
                    hosts,
                    users: rule.users.clone(),
                    groups: rule.groups.clone(),
                },
            );
        }
        Ok(ProxyUsers { rules })
    }

    /// Whether `real` (a short name; `real_principal` is what error
    /// messages name) may act as `effective`, a member of
    /// `effective_groups`, for a request from `address`. The refusal says
    /// which condition failed, in Hadoop's words.
    pub fn authorize(
        &self,
        real: &str,
        real_principal: &str,
        effective: &str,
        effective_groups: &[String],
        address: Option<IpAddr>,
    ) -> Result<(), String> {
        let refused_user =
            || format!("User: {real_principal} is not allowed to impersonate {effective}");
        let Some(rule) = self.rules.get(real) else {
            return Err(refused_user());
        };
        let user_ok = rule.users.iter().any(|u| u == "*" || u == effective)
            || rule
                .groups
                .iter()
                .any(|g| g == "*" || effective_groups.iter().any(|eg| eg == g));
        if !user_ok {
            return Err(refused_user());
        }
        let host_ok = match address {
            Some(address) => rule.hosts.iter().any(|h| h.admits(address)),
            None => rule.hosts.contains(&HostRule::Any),
        };
        if !host_ok {
            let from = address.map_or_else(|| "an unknown address".to_string(), |a| a.to_string());
            return Err(format!(
                "Unauthorized connection for super-user: {real_principal} from IP {from}"
            ));
        }
        Ok(())
    }
}

fn host_rules(user: &str, host: &str) -> Result<Vec<HostRule>, KerberosError> {
    let bad =
        |why: String| KerberosError::Config(format!("proxy_users.{user}.hosts: {host:?}: {why}"));
    if host == "*" {
        return Ok(vec![HostRule::Any]);
    }
    if let Some((network, prefix)) = host.split_once('/') {
        let network: IpAddr = network
            .parse()
            .map_err(|_| bad("a CIDR block's address does not parse".into()))?;
        let prefix: u8 = prefix
            .parse()
            .map_err(|_| bad("a CIDR block's prefix length is not a number".into()))?;
        let max = if network.is_ipv4() { 32 } else { 128 };
        if prefix > max {
            return Err(bad(format!("prefix length over {max}")));
        }
        return Ok(vec![HostRule::Block { network, prefix }]);
    }
    if let Ok(address) = host.parse::<IpAddr>() {
        let prefix = if address.is_ipv4() { 32 } else { 128 };
        return Ok(vec![HostRule::Block {
            network: address,
            prefix,
        }]);
    }
    let resolved: Vec<HostRule> = (host, 0)
        .to_socket_addrs()
        .map_err(|e| bad(format!("does not resolve: {e}")))?
        .map(|a| {
            let network = canonical(a.ip());
            HostRule::Block {
                network,
                prefix: if network.is_ipv4() { 32 } else { 128 },
            }
        })
        .collect();
    if resolved.is_empty() {
        return Err(bad("resolves to no address".into()));
    }
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real user's rule: its name, then hosts, users and groups.
    type Rule<'a> = (&'a str, &'a [&'a str], &'a [&'a str], &'a [&'a str]);

    fn users(rules: &[Rule<'_>]) -> ProxyUsers {
        let settings = rules
            .iter()
            .map(|(user, hosts, users, groups)| {
                let list = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
                (
                    user.to_string(),
                    ProxyUserSettings {
                        hosts: list(hosts),
                        users: list(users),
                        groups: list(groups),
                    },
                )
            })
            .collect();
        ProxyUsers::new(&settings).unwrap()
    }

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    #[test]
    fn a_user_without_a_rule_may_not_impersonate() {
        let p = users(&[]);
        let err = p
            .authorize("rest", "rest/h@R", "bob", &[], ip("127.0.0.1"))
            .unwrap_err();
        assert_eq!(err, "User: rest/h@R is not allowed to impersonate bob");
    }

    #[test]
    fn users_groups_and_hosts_must_both_admit() {
        let p = users(&[("rest", &["10.0.0.0/8", "127.0.0.1"], &["bob"], &["staff"])]);
        assert!(p
            .authorize("rest", "rest", "bob", &[], ip("10.1.2.3"))
            .is_ok());
        assert!(p
            .authorize("rest", "rest", "carol", &["staff".into()], ip("127.0.0.1"))
            .is_ok());
        assert!(p
            .authorize("rest", "rest", "dave", &["other".into()], ip("127.0.0.1"))
            .is_err());
        let err = p
            .authorize("rest", "rest", "bob", &[], ip("192.168.1.1"))
            .unwrap_err();
        assert_eq!(
            err,
            "Unauthorized connection for super-user: rest from IP 192.168.1.1"
        );
        assert!(p
            .authorize("rest", "rest", "bob", &[], ip("::ffff:10.0.0.9"))
            .is_ok());
        assert!(p.authorize("rest", "rest", "bob", &[], None).is_err());
    }

    #[test]
    fn stars_admit_everyone_from_everywhere() {
        let p = users(&[("gw", &["*"], &["*"], &[])]);
        assert!(p
            .authorize("gw", "gw", "anyone", &[], ip("8.8.8.8"))
            .is_ok());
        assert!(p.authorize("gw", "gw", "anyone", &[], None).is_ok());
    }

    #[test]
    fn host_names_resolve_when_the_rules_are_built() {
        let p = users(&[("gw", &["localhost"], &["*"], &[])]);
        assert!(p.authorize("gw", "gw", "x", &[], ip("127.0.0.1")).is_ok());
    }

    #[test]
    fn malformed_hosts_are_refused_naming_the_rule() {
        for host in ["10.0.0.0/33", "10.0.0.0/x", "nonsense..invalid", "x/8"] {
            let settings = BTreeMap::from([(
                "gw".to_string(),
                ProxyUserSettings {
                    hosts: vec![host.to_string()],
                    ..Default::default()
                },
            )]);
            let err = ProxyUsers::new(&settings).unwrap_err().to_string();
            assert!(err.contains("proxy_users.gw.hosts"), "{host}: {err}");
        }
    }
}
