//! Kerberos on the web UI (SPNEGO and the `hadoop.auth` cookie, as HBase's
//! info server with `hbase.security.authentication.ui = kerberos`), against
//! a real MIT KDC (scripts/throwaway_kdc.py): every page, the JSON API and
//! `/metrics` need an authenticated client; any authenticated user may
//! look.
#![cfg(feature = "kerberos")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;

use basalt::{Database, SecurityOptions};
use basalt_info::{InfoConfig, InfoServer};
use basalt_kerberos::{Initiator, KerberosSettings};

#[path = "../../../test-support/kerberos.rs"]
mod kerberos;
use kerberos::{cookie_pair, http, kdc, principal, REALM};

const HTTP_PRINCIPAL: &str = "HTTP/localhost@BASALT.TEST";
const PATHS: [&str; 3] = ["/", "/api/tables", "/metrics"];

fn authorization(user: &str) -> String {
    let initiator = Initiator::new(Some(&principal(user))).unwrap();
    let mut context = initiator.spnego_context(HTTP_PRINCIPAL).unwrap();
    let token = context.step(&[]).unwrap().unwrap();
    format!("Negotiate {}", BASE64.encode(token))
}

#[test]
fn every_page_needs_kerberos_and_any_authenticated_user_may_look() {
    let kdc = kdc();
    let dir = tempfile::tempdir().unwrap();
    let mut options = basalt::Options::new(dir.path().join("db"));
    options.security = SecurityOptions {
        authorization: true,
        superusers: vec!["alice".into()],
        authentication: basalt::Authentication::Kerberos,
        kerberos: Some(KerberosSettings {
            principal: format!("hbase/localhost@{REALM}"),
            http_principal: Some(HTTP_PRINCIPAL.into()),
            keytab: kdc.server_keytab.clone(),
            ..KerberosSettings::default()
        }),
        ..SecurityOptions::default()
    };
    let db = Database::open_with(options).unwrap();
    let config = InfoConfig {
        port: 0,
        ..InfoConfig::default()
    };
    let server = InfoServer::bind(db.clone(), &config).unwrap();
    let addr = server.local_addr();
    for path in PATHS {
        let answer = http(addr, "GET", path, &[], b"");
        assert_eq!(answer.status, 401, "{path}: {}", answer.body);
        assert_eq!(
            answer.header("WWW-Authenticate"),
            Some("Negotiate"),
            "{path}"
        );
    }
    // bob holds no grant and may look all the same.
    let answer = http(
        addr,
        "GET",
        "/",
        &[("Authorization", &authorization("bob"))],
        b"",
    );
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(answer.body.contains("<h1>Status</h1>"), "{}", answer.body);
    assert!(answer
        .header("WWW-Authenticate")
        .is_some_and(|v| v.starts_with("Negotiate ")));
    let cookie = cookie_pair(answer.header("Set-Cookie").unwrap());
    assert!(cookie.contains("u=bob&"), "{cookie}");
    for path in PATHS {
        let answer = http(addr, "GET", path, &[("Cookie", &cookie)], b"");
        assert_eq!(answer.status, 200, "{path}: {}", answer.body);
    }
    let metrics = http(addr, "GET", "/metrics", &[("Cookie", &cookie)], b"");
    assert!(metrics.body.contains("# TYPE"), "{}", metrics.body);
    let forged = cookie.replacen("u=bob", "u=alice", 1);
    let answer = http(addr, "GET", "/metrics", &[("Cookie", &forged)], b"");
    assert_eq!(answer.status, 401, "{}", answer.body);
    let answer = http(
        addr,
        "GET",
        "/api/tables",
        &[("Authorization", "Negotiate bm90IGEgdG9rZW4=")],
        b"",
    );
    assert_eq!(answer.status, 403, "{}", answer.body);
    server.shutdown();
    db.close().unwrap();
}
