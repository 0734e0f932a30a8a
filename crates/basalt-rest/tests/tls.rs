//! HTTPS on the REST gateway (`[rest.tls]`, docs/security.md): a TLS
//! client is served; a plaintext one is refused unless plaintext is kept
//! for a migration, and then served beside TLS clients on the same port;
//! a client certificate from another CA is refused when the gateway
//! requires one; a key anyone may read stops the gateway from starting.
//! (A renewed certificate is served without a restart: the same
//! `basalt::tls` code, tested through Thrift and native RPC.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use basalt::tls::TlsSettings;
use basalt_rest::{RestConfig, RestServer};

mod common;
use common::Fixture;

#[path = "../../../test-support/certificates.rs"]
mod certificates;
use certificates::{cas, settings, TestCa};

/// A client trusting CA `one`, presenting a certificate `signer` issued
/// (or none).
fn client(signer: Option<&TestCa>) -> Arc<rustls::ClientConfig> {
    certificates::client_config(cas().1, signer, "rest-client")
}

#[path = "../../../test-support/https.rs"]
mod https;

fn start(tls: TlsSettings) -> Fixture {
    Fixture::with(RestConfig {
        tls: Some(tls),
        ..RestConfig::default()
    })
}

/// The cluster version over HTTPS or HTTP, or what went wrong.
fn version(f: &Fixture, tls: Option<Arc<rustls::ClientConfig>>) -> Result<String, String> {
    let answer = https::get(f.addr, "/version/cluster", tls)?;
    assert_eq!(answer.status, 200, "{}", answer.body);
    Ok(answer.body)
}

#[test]
fn an_https_client_is_served_and_a_plaintext_one_refused() {
    let (_, one, _) = cas();
    let (cert, key) = one.server("rest-tls-only");
    let f = start(settings(&cert, &key, None, false));
    let served = version(&f, Some(client(None))).unwrap();
    assert!(!served.trim().is_empty(), "no version in {served:?}");
    let refused = https::get(f.addr, "/version/cluster", None);
    assert!(
        refused.is_err(),
        "a plaintext client was answered: {refused:?}"
    );
}

#[test]
fn plaintext_http_is_served_beside_https_while_clients_move() {
    let (_, one, _) = cas();
    let (cert, key) = one.server("rest-migration");
    let f = start(settings(&cert, &key, None, true));
    let plain = version(&f, None).unwrap();
    let secured = version(&f, Some(client(None))).unwrap();
    assert_eq!(plain, secured);
}

#[test]
fn a_client_certificate_from_another_ca_is_refused() {
    let (_, one, two) = cas();
    let (cert, key) = one.server("rest-client-ca");
    let f = start(settings(&cert, &key, Some(one.cert()), false));
    version(&f, Some(client(Some(one)))).unwrap();
    let other = https::get(f.addr, "/version/cluster", Some(client(Some(two))));
    assert!(
        other.is_err(),
        "a client of another CA was answered: {other:?}"
    );
    let none = https::get(f.addr, "/version/cluster", Some(client(None)));
    assert!(
        none.is_err(),
        "a client without a certificate was answered: {none:?}"
    );
}

#[test]
fn a_key_anyone_may_read_stops_the_gateway_from_starting() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, one, _) = cas();
    let (cert, key) = one.issue("rest-open-key", "IP:127.0.0.1");
    let open = dir.join("rest-open-key-copy.pem");
    std::fs::copy(&key, &open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
    let config = RestConfig {
        port: 0,
        tls: Some(settings(&cert, &open, None, false)),
        ..RestConfig::default()
    };
    let error = RestServer::bind(&config).unwrap_err().to_string();
    assert!(error.contains("readable by every user"), "{error}");
}
