//! The web UI over HTTPS (`[info.tls]`, docs/security.md): its pages and
//! `/metrics` are served to a TLS client, and a plaintext client is
//! refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use basalt::tls::{TlsClientSettings, TlsSettings};
use basalt::Database;
use basalt_info::{InfoConfig, InfoServer};

#[path = "../../../test-support/certificates.rs"]
mod certificates;
use certificates::TestCa;

#[path = "../../../test-support/https.rs"]
mod https;

#[test]
fn the_web_ui_is_served_over_https_and_not_to_plaintext_clients() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "ui");
    let (cert, key) = ca.server("info");
    let db = Database::open(dir.path().join("db")).unwrap();
    db.create_table(
        basalt::TableDescriptor::new("shown").family(basalt::ColumnFamilyDescriptor::new("cf")),
    )
    .unwrap();
    let config = InfoConfig {
        port: 0,
        tls: Some(TlsSettings {
            cert_file: cert,
            key_file: key,
            client_ca_file: None,
            plaintext: false,
        }),
        ..InfoConfig::default()
    };
    let server = InfoServer::bind(db.clone(), &config).unwrap();
    let addr = server.local_addr();
    let client = basalt::tls::client_config(&TlsClientSettings {
        ca_file: ca.cert(),
        cert_file: None,
        key_file: None,
    })
    .unwrap();
    let page = https::get(addr, "/", Some(client.clone())).unwrap();
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("<h1>Status</h1>"), "{}", page.body);
    let tables = https::get(addr, "/tables", Some(client.clone())).unwrap();
    assert_eq!(tables.status, 200, "{}", tables.body);
    assert!(
        tables.body.contains("shown"),
        "the table is not listed: {}",
        tables.body
    );
    let metrics = https::get(addr, "/metrics", Some(client)).unwrap();
    assert_eq!(metrics.status, 200);
    assert!(metrics.body.contains("# TYPE"), "{}", metrics.body);
    let plain = https::get(addr, "/", None);
    assert!(plain.is_err(), "a plaintext client was answered: {plain:?}");
    server.shutdown();
    db.close().unwrap();
}
