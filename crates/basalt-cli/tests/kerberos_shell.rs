//! `basalt shell` against a `basalt serve` that takes Kerberos only, as an
//! HBase user runs `kinit` then `hbase shell`: the shell authenticates as
//! the ticket cache's principal over Thrift's SASL GSSAPI, `whoami` says
//! who that is, and the server's grants decide what it may do. A real MIT
//! KDC (basalt_kerberos::testing).
#![cfg(feature = "kerberos")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use basalt_kerberos::testing::{ThrowawayKdc, REALM};

mod common;

/// A ticket cache holding `user`'s ticket, as `kinit` makes it.
fn kinit(dir: &Path, user: &str) -> String {
    let kdc = ThrowawayKdc::get();
    let cache = format!("FILE:{}", dir.join(format!("{user}.ccache")).display());
    let status = Command::new("kinit")
        .env("KRB5CCNAME", &cache)
        .arg("-kt")
        .arg(&kdc.client_keytab)
        .arg(ThrowawayKdc::principal(user))
        .status()
        .unwrap();
    assert!(status.success(), "kinit {user}");
    cache
}

/// `basalt shell -e commands` with the ticket cache `cache` (no keytab:
/// the cache's principal is who the shell is).
fn shell(port: u16, kerberos: bool, cache: &str, commands: &str) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_basalt"));
    command
        .args(["shell", "--host", "127.0.0.1", "--port", &port.to_string()])
        .env("KRB5CCNAME", cache)
        .env_remove("KRB5_CLIENT_KTNAME")
        .env_remove("RUST_LOG");
    if kerberos {
        command.args(["--kerberos-principal", &format!("hbase/localhost@{REALM}")]);
    }
    command.args(["-e", commands]).output().unwrap()
}

#[test]
fn the_shell_authenticates_with_the_ticket_cache_and_is_held_to_its_grants() {
    let kdc = ThrowawayKdc::get();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("basalt.toml");
    std::fs::write(
        &config,
        format!(
            "[security]\nauthorization = true\nauthentication = \"kerberos\"\nsuperusers = [\"alice\"]\n\n[security.kerberos]\nprincipal = \"hbase/localhost@{REALM}\"\nhttp_principal = \"HTTP/localhost@{REALM}\"\nkeytab = \"{}\"\n",
            kdc.server_keytab.display()
        ),
    )
    .unwrap();
    let data = dir.path().join("data");
    let server = common::start(
        &[
            "--thrift-port",
            "0",
            "--data-dir",
            data.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
        ],
        None,
    );

    let alice = kinit(dir.path(), "alice");
    let out = shell(
        server.port,
        true,
        &alice,
        "whoami; create 'kt', 'f'; put 'kt', 'r1', 'f:q', 'v1'; get 'kt', 'r1'",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!("alice@{REALM} (auth:KERBEROS)")),
        "{text}"
    );
    assert!(text.contains("value=v1"), "{text}");

    // bob proves who he is, and holds no grant.
    let bob = kinit(dir.path(), "bob");
    let out = shell(server.port, true, &bob, "put 'kt', 'r2', 'f:q', 'forged'");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("bob"), "{text}");

    // A shell that does not authenticate gets nothing.
    let out = shell(server.port, false, &alice, "list");
    assert!(!out.status.success());

    // And nothing bob or the plain shell tried was written.
    let out = shell(server.port, true, &alice, "count 'kt'");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1 row(s)"), "{text}");
}
