//! A real MIT KDC for the gateways' Kerberos tests (scripts/throwaway_kdc.py,
//! one per test process), the server's keytab (`hbase/localhost`,
//! `HTTP/localhost`) and the users' (`alice`, `bob`, `carol`), and a raw
//! HTTP/1.1 request that shows every header of the answer.
//!
//! MIT Kerberos reads its environment (`KRB5_CONFIG`, `KRB5_KTNAME`,
//! `KRB5_CLIENT_KTNAME`, `KRB5CCNAME`) when it is used: [`kdc`] sets it
//! once, before any test goes on (every test calls it first).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

pub const REALM: &str = "BASALT.TEST";

/// The test process's KDC.
pub struct Kdc {
    /// `hbase/localhost` and `HTTP/localhost`, as a server holds them.
    pub server_keytab: PathBuf,
    _dir: tempfile::TempDir,
}

/// Starts the KDC (stopped when the test process ends) and points MIT
/// Kerberos at it.
pub fn kdc() -> &'static Kdc {
    static KDC: OnceLock<Kdc> = OnceLock::new();
    KDC.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/throwaway_kdc.py");
        let out = Command::new("python3")
            .arg(&script)
            .arg("start")
            .arg(dir.path())
            .args(["--realm", REALM])
            .args([
                "--principal",
                "hbase/localhost",
                "--principal",
                "HTTP/localhost",
            ])
            .args([
                "--principal",
                "alice",
                "--principal",
                "bob",
                "--principal",
                "carol",
            ])
            .args(["--watch-pid", &std::process::id().to_string()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "the KDC did not start (Debian: krb5-kdc krb5-admin-server): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let started: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let keytab = |name: &str| PathBuf::from(started["keytabs"][name].as_str().unwrap());
        let server_keytab = dir.path().join("server.keytab");
        merge_keytabs(
            &[keytab("hbase/localhost"), keytab("HTTP/localhost")],
            &server_keytab,
        );
        let users = dir.path().join("users.keytab");
        merge_keytabs(&[keytab("alice"), keytab("bob"), keytab("carol")], &users);
        for (name, value) in started["env"].as_object().unwrap() {
            std::env::set_var(name, value.as_str().unwrap());
        }
        std::env::set_var("KRB5_KTNAME", format!("FILE:{}", server_keytab.display()));
        std::env::set_var("KRB5_CLIENT_KTNAME", format!("FILE:{}", users.display()));
        // A cache collection: each user's tickets beside the others'.
        let caches = dir.path().join("caches");
        std::fs::create_dir_all(&caches).unwrap();
        std::env::set_var("KRB5CCNAME", format!("DIR:{}", caches.display()));
        Kdc {
            server_keytab,
            _dir: dir,
        }
    })
}

fn merge_keytabs(parts: &[PathBuf], into: &Path) {
    let mut script = String::new();
    for part in parts {
        script.push_str(&format!("rkt {}\n", part.display()));
    }
    script.push_str(&format!("wkt {}\nquit\n", into.display()));
    let mut child = Command::new("ktutil")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(into, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// `user@REALM`.
pub fn principal(user: &str) -> String {
    format!("{user}@{REALM}")
}

/// An HTTP answer.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    /// Every value of header `name`.
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The first value of header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.all(name).first().copied()
    }
}

/// One request on a new connection (`Connection: close`), the whole
/// answer read.
pub fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Answer {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost:{}\r\nConnection: close\r\nContent-Length: {}\r\n",
        addr.port(),
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    let mut bytes = request.into_bytes();
    bytes.extend_from_slice(body);
    stream.write_all(&bytes).unwrap();
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP answer: {text:?}"));
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    Answer {
        status,
        headers,
        body: body.to_string(),
    }
}

/// The `name=value` part of a `Set-Cookie` value, as a client sends it
/// back in `Cookie`.
pub fn cookie_pair(set_cookie: &str) -> String {
    set_cookie.split(';').next().unwrap().trim().to_string()
}
