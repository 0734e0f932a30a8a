//! Kerberos on REST (SPNEGO and the `hadoop.auth` cookie, as HBase's REST
//! server runs Hadoop's `AuthenticationFilter`), against a real MIT KDC
//! (scripts/throwaway_kdc.py): requests act as the authenticated user,
//! `doAs` follows the proxy-user rules, and whoever proves nothing gets
//! nothing.
#![cfg(feature = "kerberos")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;

use basalt::{ColumnFamilyDescriptor, Database, Put, SecurityOptions, TableDescriptor};
use basalt_kerberos::{Context, Initiator, KerberosSettings, ProxyUserSettings};
use basalt_rest::{RestConfig, RestServer};

#[path = "../../../test-support/kerberos.rs"]
mod kerberos;
use kerberos::{cookie_pair, http, kdc, principal, Answer, REALM};

const HTTP_PRINCIPAL: &str = "HTTP/localhost@BASALT.TEST";

/// A REST server with Kerberos on, over a database holding `t` (row `r`,
/// `cf:q` = `v`); alice is a superuser, bob and carol hold no grant.
struct Server {
    db: Database,
    server: Option<RestServer>,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            server.shutdown();
        }
        let _ = self.db.close();
    }
}

fn settings(tune: impl FnOnce(&mut KerberosSettings)) -> KerberosSettings {
    let mut settings = KerberosSettings {
        principal: format!("hbase/localhost@{REALM}"),
        http_principal: Some(HTTP_PRINCIPAL.into()),
        keytab: kdc().server_keytab.clone(),
        ..KerberosSettings::default()
    };
    tune(&mut settings);
    settings
}

fn start(kerberos: KerberosSettings, proxy_users: BTreeMap<String, ProxyUserSettings>) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let mut options = basalt::Options::new(dir.path().join("db"));
    options.security = SecurityOptions {
        authorization: true,
        superusers: vec!["alice".into()],
        authentication: basalt::Authentication::Kerberos,
        kerberos: Some(kerberos),
        proxy_users,
        ..SecurityOptions::default()
    };
    let db = Database::open_with(options).unwrap();
    db.create_table(TableDescriptor::new("t").family(ColumnFamilyDescriptor::new("cf")))
        .unwrap();
    db.table("t")
        .unwrap()
        .put(&Put::new("r").add("cf", "q", "v"))
        .unwrap();
    let config = RestConfig {
        port: 0,
        ..RestConfig::default()
    };
    let server = RestServer::start(db.clone(), &config).unwrap();
    let addr = server.local_addr();
    Server {
        db,
        server: Some(server),
        addr,
        _dir: dir,
    }
}

/// A client context of `user` towards the HTTP principal, through SPNEGO
/// as curl and browsers send it, and its first token.
fn negotiate(user: &str) -> (Context, String) {
    kdc();
    let initiator = Initiator::new(Some(&principal(user))).unwrap();
    let mut context = initiator.spnego_context(HTTP_PRINCIPAL).unwrap();
    let token = context.step(&[]).unwrap().unwrap();
    (context, format!("Negotiate {}", BASE64.encode(token)))
}

fn get(s: &Server, path: &str, headers: &[(&str, &str)]) -> Answer {
    let mut all = vec![("Accept", "application/json")];
    all.extend_from_slice(headers);
    http(s.addr, "GET", path, &all, b"")
}

fn cell_value(answer: &Answer) -> Vec<u8> {
    let json: serde_json::Value = serde_json::from_str(&answer.body).unwrap();
    BASE64
        .decode(json["Row"][0]["Cell"][0]["$"].as_str().unwrap())
        .unwrap()
}

/// Alice's cookie, from a `Negotiate` exchange.
fn alice_cookie(s: &Server) -> String {
    let (_, authorization) = negotiate("alice");
    let answer = get(s, "/t/r", &[("Authorization", &authorization)]);
    assert_eq!(answer.status, 200, "{}", answer.body);
    cookie_pair(answer.header("Set-Cookie").unwrap())
}

#[test]
fn a_request_without_credentials_is_challenged_to_negotiate() {
    let s = start(settings(|_| {}), BTreeMap::new());
    let answer = get(&s, "/t/r", &[]);
    assert_eq!(answer.status, 401, "{}", answer.body);
    assert_eq!(answer.header("WWW-Authenticate"), Some("Negotiate"));
    assert!(
        answer.body.contains("Authentication required"),
        "{}",
        answer.body
    );
    // Basic (or any other scheme) gets the same challenge.
    let answer = get(
        &s,
        "/version/cluster",
        &[("Authorization", "Basic YWxpY2U6eA==")],
    );
    assert_eq!(answer.status, 401);
    assert_eq!(answer.header("WWW-Authenticate"), Some("Negotiate"));
}

#[test]
fn a_valid_token_is_served_with_mutual_authentication_and_a_cookie() {
    let s = start(settings(|_| {}), BTreeMap::new());
    let (mut context, authorization) = negotiate("alice");
    let answer = get(&s, "/t/r", &[("Authorization", &authorization)]);
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(cell_value(&answer), b"v");
    // The server proves itself: its reply token completes the client's
    // context (requests-gssapi insists on it).
    let reply = answer
        .header("WWW-Authenticate")
        .and_then(|v| v.strip_prefix("Negotiate "))
        .expect("a mutual authentication token");
    context.step(&BASE64.decode(reply).unwrap()).unwrap();
    assert!(context.is_complete());
    let set_cookie = answer.header("Set-Cookie").unwrap();
    assert!(
        set_cookie.starts_with(&format!(
            "hadoop.auth=\"u=alice&p=alice@{REALM}&t=kerberos&e="
        )),
        "{set_cookie}"
    );
    assert!(set_cookie.contains("&s="), "{set_cookie}");
    assert!(set_cookie.ends_with("; Path=/; HttpOnly"), "{set_cookie}");
    // The cookie alone is enough afterwards.
    let cookie = cookie_pair(set_cookie);
    let answer = get(&s, "/t/r", &[("Cookie", &cookie)]);
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(cell_value(&answer), b"v");
    assert!(answer.header("Set-Cookie").is_none());
}

#[test]
fn a_bare_kerberos_token_is_accepted_as_hadoop_accepts_it() {
    let s = start(settings(|_| {}), BTreeMap::new());
    let initiator = Initiator::new(Some(&principal("alice"))).unwrap();
    let mut context = initiator.context(HTTP_PRINCIPAL).unwrap();
    let token = context.step(&[]).unwrap().unwrap();
    let authorization = format!("Negotiate {}", BASE64.encode(token));
    let answer = get(&s, "/t/r", &[("Authorization", &authorization)]);
    assert_eq!(answer.status, 200, "{}", answer.body);
}

#[test]
fn a_tampered_cookie_is_refused_and_cleared() {
    let s = start(settings(|_| {}), BTreeMap::new());
    let cookie = alice_cookie(&s);
    // bob's name in alice's signed cookie.
    let forged = cookie.replacen("u=alice", "u=bob", 1);
    assert_ne!(forged, cookie);
    let answer = get(&s, "/t/r", &[("Cookie", &forged)]);
    assert_eq!(answer.status, 401, "{}", answer.body);
    assert_eq!(answer.header("WWW-Authenticate"), Some("Negotiate"));
    assert!(answer.body.contains("invalid signature"), "{}", answer.body);
    assert!(
        answer
            .header("Set-Cookie")
            .unwrap()
            .starts_with("hadoop.auth=;"),
        "{:?}",
        answer.headers
    );
    // A cookie signed by another server (another secret) is no better.
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, b"a different secret, long enough").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let elsewhere = start(
        settings(|k| k.http_signature_secret_file = Some(secret.clone())),
        BTreeMap::new(),
    );
    let answer = get(&elsewhere, "/t/r", &[("Cookie", &cookie)]);
    assert_eq!(answer.status, 401, "{}", answer.body);
}

#[test]
fn an_expired_cookie_is_refused() {
    let s = start(
        settings(|k| k.http_token_validity_secs = 1),
        BTreeMap::new(),
    );
    let cookie = alice_cookie(&s);
    assert_eq!(get(&s, "/t/r", &[("Cookie", &cookie)]).status, 200);
    std::thread::sleep(Duration::from_millis(1100));
    let answer = get(&s, "/t/r", &[("Cookie", &cookie)]);
    assert_eq!(answer.status, 401, "{}", answer.body);
    assert_eq!(answer.header("WWW-Authenticate"), Some("Negotiate"));
}

#[test]
fn a_token_kerberos_refuses_is_forbidden() {
    let s = start(settings(|_| {}), BTreeMap::new());
    let answer = get(&s, "/t/r", &[("Authorization", "Negotiate AAAAAAAA")]);
    assert_eq!(answer.status, 403, "{}", answer.body);
    // A ticket for the RPC principal is not one for HTTP.
    let initiator = Initiator::new(Some(&principal("alice"))).unwrap();
    let mut context = initiator
        .spnego_context(&format!("hbase/localhost@{REALM}"))
        .unwrap();
    let token = context.step(&[]).unwrap().unwrap();
    let authorization = format!("Negotiate {}", BASE64.encode(token));
    let answer = get(&s, "/t/r", &[("Authorization", &authorization)]);
    assert_eq!(answer.status, 403, "{}", answer.body);
    // A replayed token is refused too (the replay cache).
    let (_, authorization) = negotiate("alice");
    assert_eq!(
        get(&s, "/t/r", &[("Authorization", &authorization)]).status,
        200
    );
    let answer = get(&s, "/t/r", &[("Authorization", &authorization)]);
    assert_eq!(answer.status, 403, "{}", answer.body);
}

#[test]
fn a_user_without_grants_is_forbidden_and_writes_nothing() {
    let s = start(settings(|_| {}), BTreeMap::new());
    let (_, authorization) = negotiate("bob");
    let answer = get(&s, "/t/r", &[("Authorization", &authorization)]);
    assert_eq!(answer.status, 403, "{}", answer.body);
    assert!(
        answer.body.contains("AccessDeniedException"),
        "{}",
        answer.body
    );
    assert!(answer.body.contains("bob"), "{}", answer.body);
    // Authenticated all the same: the cookie came with the refusal.
    let cookie = cookie_pair(answer.header("Set-Cookie").unwrap());
    let answer = http(
        s.addr,
        "PUT",
        "/t/r/cf:q",
        &[
            ("Cookie", &cookie),
            ("Content-Type", "application/octet-stream"),
        ],
        b"forged",
    );
    assert_eq!(answer.status, 403, "{}", answer.body);
    let row =
        s.db.table("t")
            .unwrap()
            .get(&basalt::Get::new("r"))
            .unwrap();
    assert_eq!(row.value(b"cf", b"q").unwrap().as_ref(), b"v");
}

fn carol_may_act_for_alice() -> BTreeMap<String, ProxyUserSettings> {
    BTreeMap::from([(
        "carol".to_string(),
        ProxyUserSettings {
            hosts: vec!["127.0.0.1".into()],
            users: vec!["alice".into()],
            groups: vec![],
        },
    )])
}

#[test]
fn do_as_needs_the_proxy_user_setting() {
    let s = start(settings(|_| {}), carol_may_act_for_alice());
    let (_, authorization) = negotiate("carol");
    let answer = get(&s, "/t/r?doAs=alice", &[("Authorization", &authorization)]);
    assert_eq!(answer.status, 403, "{}", answer.body);
    assert!(
        answer
            .body
            .contains("Support for proxyuser is not configured"),
        "{}",
        answer.body
    );
}

#[test]
fn do_as_follows_the_proxy_user_rules() {
    let s = start(
        settings(|k| k.rest_support_proxyuser = true),
        carol_may_act_for_alice(),
    );
    // carol holds no grant, and reads as alice.
    let (_, authorization) = negotiate("carol");
    let answer = get(&s, "/t/r?doAs=alice", &[("Authorization", &authorization)]);
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(cell_value(&answer), b"v");
    let cookie = cookie_pair(answer.header("Set-Cookie").unwrap());
    // As herself she is refused: the cookie names carol, not alice.
    assert_eq!(get(&s, "/t/r", &[("Cookie", &cookie)]).status, 403);
    assert_eq!(
        get(&s, "/t/r?doas=alice", &[("Cookie", &cookie)]).status,
        200
    );
    // bob has no rule.
    let (_, authorization) = negotiate("bob");
    let answer = get(&s, "/t/r?doAs=alice", &[("Authorization", &authorization)]);
    assert_eq!(answer.status, 403, "{}", answer.body);
    assert!(
        answer
            .body
            .contains("User: bob is not allowed to impersonate alice"),
        "{}",
        answer.body
    );
    // And carol may act for alice only.
    let answer = get(&s, "/t/r?doAs=bob", &[("Cookie", &cookie)]);
    assert_eq!(answer.status, 403, "{}", answer.body);
}

#[test]
fn a_scanner_answers_only_the_user_who_opened_it() {
    let s = start(
        settings(|k| k.rest_support_proxyuser = true),
        carol_may_act_for_alice(),
    );
    let cookie = alice_cookie(&s);
    let created = http(
        s.addr,
        "PUT",
        "/t/scanner",
        &[("Cookie", &cookie), ("Content-Type", "application/json")],
        b"{\"batch\":10}",
    );
    assert_eq!(created.status, 201, "{}", created.body);
    let location = created.header("Location").unwrap();
    let path = &location[location.find("/t/scanner/").unwrap()..];
    // carol, who knows the scanner's URL, is not its owner.
    let (_, authorization) = negotiate("carol");
    let answer = get(&s, path, &[("Authorization", &authorization)]);
    assert_eq!(answer.status, 404, "{}", answer.body);
    let answer = get(&s, path, &[("Cookie", &cookie)]);
    assert_eq!(answer.status, 200, "{}", answer.body);
}
