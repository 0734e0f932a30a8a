//! Kerberos on native RPC (SASL GSSAPI, docs/native-rpc.md
//! "Authentication"), against a real MIT KDC this test starts
//! (scripts/throwaway_kdc.py): a keytab-authenticated client is checked
//! as its short name, each protection carries calls, and whoever cannot
//! prove a name gets nothing.
#![cfg(feature = "kerberos")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use basalt::{ColumnFamilyDescriptor, Put, SecurityOptions, TableDescriptor};
use basalt_kerberos::testing::{ThrowawayKdc, REALM};
use basalt_kerberos::{KerberosSettings, ProxyUserSettings, Qop};
use basalt_rpc::client::{KerberosClient, RpcClient};
use basalt_rpc::proto::client::{
    mutation_proto, Get, GetRequest, GetResponse, MutateRequest, MutationProto,
};
use basalt_rpc::{RpcConfig, RpcError};
use bytes::Bytes;

mod common;
use common::Fixture;

const DENIED: &str = "org.apache.hadoop.hbase.security.AccessDeniedException";

fn kdc() -> &'static ThrowawayKdc {
    ThrowawayKdc::get()
}

fn security(protection: &[Qop], proxy: BTreeMap<String, ProxyUserSettings>) -> SecurityOptions {
    let kdc = kdc();
    SecurityOptions {
        authorization: true,
        superusers: vec!["alice".into()],
        authentication: basalt::Authentication::Kerberos,
        kerberos: Some(KerberosSettings {
            principal: format!("hbase/_HOST@{REALM}"),
            keytab: kdc.server_keytab.clone(),
            rpc_protection: protection.to_vec(),
            ..KerberosSettings::default()
        }),
        proxy_users: proxy,
        ..SecurityOptions::default()
    }
}

/// A Kerberos server (announcing `localhost`, so `_HOST` is that) over a
/// database holding `t` with one row `r`.
fn start(security: SecurityOptions) -> Fixture {
    let config = RpcConfig {
        bind: "127.0.0.1".into(),
        hostname: Some("localhost".into()),
        ..RpcConfig::default()
    };
    common::start_serving_secured(config, security, |db| {
        db.create_table(TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("cf")))
            .unwrap();
        db.table("t")
            .unwrap()
            .put(&Put::new("r").add("cf", "q", "v"))
            .unwrap();
    })
}

fn as_user(user: &str, protection: &[Qop]) -> KerberosClient {
    KerberosClient {
        server_principal: format!("hbase/_HOST@{REALM}"),
        protection: protection.to_vec(),
        client_principal: Some(format!("{user}@{REALM}")),
    }
}

fn connect(
    f: &Fixture,
    client: &KerberosClient,
    effective: Option<&str>,
) -> Result<RpcClient, RpcError> {
    RpcClient::connect_kerberos(
        f.server.region_server_addr(),
        "ClientService",
        false,
        client,
        effective,
    )
}

fn region(f: &Fixture) -> Option<basalt_rpc::proto::hbase::RegionSpecifier> {
    let name = f.db.describe_table("t").unwrap().regions[0]
        .info
        .region_name();
    common::region(&name)
}

fn get(f: &Fixture, c: &mut RpcClient, row: &[u8]) -> Result<Vec<u8>, RpcError> {
    let answer = c.call(
        "Get",
        &GetRequest {
            region: region(f),
            get: Some(Get {
                row: Bytes::copy_from_slice(row),
                ..Default::default()
            }),
        },
        &[],
    )?;
    let response: GetResponse = answer.decode()?;
    Ok(response
        .result
        .unwrap_or_default()
        .cell
        .first()
        .map(|c| c.value.clone().unwrap_or_default().to_vec())
        .unwrap_or_default())
}

fn put(f: &Fixture, c: &mut RpcClient, row: &[u8], value: &[u8]) -> Result<(), RpcError> {
    let column = mutation_proto::ColumnValue {
        family: Bytes::from_static(b"cf"),
        qualifier_value: vec![mutation_proto::column_value::QualifierValue {
            qualifier: Some(Bytes::from_static(b"q")),
            value: Some(Bytes::copy_from_slice(value)),
            ..Default::default()
        }],
    };
    c.call(
        "Mutate",
        &MutateRequest {
            region: region(f),
            mutation: Some(MutationProto {
                row: Some(Bytes::copy_from_slice(row)),
                mutate_type: Some(mutation_proto::MutationType::Put as i32),
                column_value: vec![column],
                ..Default::default()
            }),
            ..Default::default()
        },
        &[],
    )
    .map(|_| ())
}

#[test]
fn a_keytab_client_is_checked_as_its_principals_short_name() {
    let f = start(security(&[Qop::Authentication], BTreeMap::new()));
    let mut alice = connect(&f, &as_user("alice", &[Qop::Authentication]), None).unwrap();
    assert_eq!(get(&f, &mut alice, b"r").unwrap(), b"v");
    // bob proves who he is, and has no grant.
    let mut bob = connect(&f, &as_user("bob", &[Qop::Authentication]), None).unwrap();
    let err = get(&f, &mut bob, b"r").unwrap_err();
    assert_eq!(err.class, DENIED, "{err}");
    assert!(err.message.contains("bob"), "{err}");
}

#[test]
fn every_protection_carries_calls_and_a_megabyte_value_both_ways() {
    let all = [Qop::Privacy, Qop::Integrity, Qop::Authentication];
    let f = start(security(&all, BTreeMap::new()));
    let big: Vec<u8> = (0..(1 << 20)).map(|i| (i * 7 % 251) as u8).collect();
    for qop in all {
        let mut alice = connect(&f, &as_user("alice", &[qop]), None).unwrap();
        let row = format!("row-{}", qop.name());
        put(&f, &mut alice, row.as_bytes(), &big).unwrap();
        assert_eq!(
            get(&f, &mut alice, row.as_bytes()).unwrap(),
            big,
            "{}",
            qop.name()
        );
        // Several calls on one wrapped connection keep their order.
        for _ in 0..3 {
            assert_eq!(get(&f, &mut alice, b"r").unwrap(), b"v");
        }
    }
}

#[test]
fn a_client_without_kerberos_is_refused_and_writes_nothing() {
    let f = start(security(&[Qop::Authentication], BTreeMap::new()));
    let refused = RpcClient::connect_as(
        f.server.region_server_addr(),
        "ClientService",
        false,
        "alice",
        None,
    )
    .and_then(|mut simple| put(&f, &mut simple, b"r", b"forged"));
    let err = refused.unwrap_err();
    assert_eq!(err.class, DENIED, "{err}");
    assert!(err.message.contains("Authentication is required"), "{err}");
    let mut alice = connect(&f, &as_user("alice", &[Qop::Authentication]), None).unwrap();
    assert_eq!(get(&f, &mut alice, b"r").unwrap(), b"v");
}

#[test]
fn a_ticket_for_another_principal_is_refused() {
    let f = start(security(&[Qop::Authentication], BTreeMap::new()));
    // HTTP/localhost exists in the realm, and is not this server.
    let client = KerberosClient {
        server_principal: format!("HTTP/localhost@{REALM}"),
        ..as_user("alice", &[Qop::Authentication])
    };
    let err = connect(&f, &client, None).unwrap_err();
    assert_eq!(err.class, "javax.security.sasl.SaslException", "{err}");
    // And a client expecting another service is told the server is not it.
    let client = KerberosClient {
        server_principal: format!("hive/_HOST@{REALM}"),
        ..as_user("alice", &[Qop::Authentication])
    };
    let err = connect(&f, &client, None).unwrap_err();
    assert!(err.message.contains("not expected"), "{err}");
}

#[test]
fn a_client_insisting_on_privacy_does_not_settle_for_less() {
    let f = start(security(&[Qop::Authentication], BTreeMap::new()));
    let err = connect(&f, &as_user("alice", &[Qop::Privacy]), None).unwrap_err();
    assert!(err.message.contains("none of privacy"), "{err}");
}

#[test]
fn acting_for_another_user_follows_the_proxy_user_rules() {
    let rules = BTreeMap::from([(
        "bob".to_string(),
        ProxyUserSettings {
            hosts: vec!["127.0.0.1".into()],
            users: vec!["alice".into()],
            groups: vec![],
        },
    )]);
    let f = start(security(&[Qop::Authentication], rules));
    // bob may act for alice (a superuser here) from loopback...
    let mut as_alice = connect(&f, &as_user("bob", &[Qop::Authentication]), Some("alice")).unwrap();
    assert_eq!(get(&f, &mut as_alice, b"r").unwrap(), b"v");
    // ...and alice may not act for bob: she has no rule.
    let refused = connect(&f, &as_user("alice", &[Qop::Authentication]), Some("bob"))
        .and_then(|mut c| get(&f, &mut c, b"r"));
    let err = refused.unwrap_err();
    assert_eq!(err.class, DENIED, "{err}");
    assert!(
        err.message.contains("is not allowed to impersonate bob"),
        "{err}"
    );
}

#[test]
fn a_kerberos_client_refuses_a_server_without_security() {
    kdc();
    let f = common::start_serving(|_| {});
    let err = RpcClient::connect_kerberos(
        f.server.region_server_addr(),
        "ClientService",
        false,
        &KerberosClient {
            server_principal: format!("hbase/localhost@{REALM}"),
            ..as_user("alice", &[Qop::Authentication])
        },
        None,
    )
    .unwrap_err();
    assert!(err.class.ends_with("FallbackDisallowedException"), "{err}");
}

/// Sends `token` as a KERBEROS client's first token on a new connection;
/// answers the server's first status word and what followed it.
fn send_first_token(f: &Fixture, token: &[u8]) -> (u32, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(f.server.region_server_addr()).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    let mut hello = b"HBas\x00\x51".to_vec();
    hello.extend_from_slice(&(token.len() as u32).to_be_bytes());
    hello.extend_from_slice(token);
    s.write_all(&hello).unwrap();
    let mut word = [0u8; 4];
    s.read_exact(&mut word).unwrap();
    let status = u32::from_be_bytes(word);
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    (status, String::from_utf8_lossy(&rest).into_owned())
}

#[test]
fn an_expired_ticket_is_refused() {
    let f = start(security(&[Qop::Authentication], BTreeMap::new()));
    ThrowawayKdc::limit_ticket_life("carol", 2).unwrap();
    let initiator =
        basalt_kerberos::Initiator::new(Some(&ThrowawayKdc::principal("carol"))).unwrap();
    let mut context = initiator
        .context(&format!("hbase/localhost@{REALM}"))
        .unwrap();
    let token = context.step(&[]).unwrap().unwrap();
    // Past the ticket's end and the one-second skew the test realm allows.
    std::thread::sleep(std::time::Duration::from_secs(5));
    let (status, rest) = send_first_token(&f, &token);
    assert_eq!(status, 1, "ERROR, then the exception: {rest}");
    assert!(rest.contains("javax.security.sasl.SaslException"), "{rest}");
    assert!(rest.to_lowercase().contains("expired"), "{rest}");
}

#[test]
fn a_replayed_ticket_is_refused() {
    let f = start(security(&[Qop::Authentication], BTreeMap::new()));
    let initiator =
        basalt_kerberos::Initiator::new(Some(&ThrowawayKdc::principal("alice"))).unwrap();
    let mut context = initiator
        .context(&format!("hbase/localhost@{REALM}"))
        .unwrap();
    let token = context.step(&[]).unwrap().unwrap();
    let (first, _) = send_first_token(&f, &token);
    assert_eq!(
        first, 0,
        "the first use is accepted (SUCCESS and the server's token)"
    );
    let (again, rest) = send_first_token(&f, &token);
    assert_eq!(again, 1, "{rest}");
    assert!(rest.contains("javax.security.sasl.SaslException"), "{rest}");
}
