//! Throwaway certificate authorities for the TLS tests, made with the
//! `openssl` command (Debian's package; scripts/test installs it): a CA,
//! and certificates it signs for `127.0.0.1` / `localhost` (servers) or a
//! name (clients). Keys are written mode 0600, as a server demands.

#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use basalt::tls::{TlsClientSettings, TlsSettings};

/// A CA in a directory: `<name>-ca.pem` and its key.
pub struct TestCa {
    dir: PathBuf,
    name: String,
}

fn openssl(args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .output()
        .expect("the openssl command (apt install openssl)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A serial number no other certificate of the run has (no serial file
/// that tests issuing at once would share).
fn serial() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    format!("{}", (nanos >> 8) + NEXT.fetch_add(1, Ordering::Relaxed))
}

impl TestCa {
    /// A new CA named `name` in `dir`.
    pub fn new(dir: &Path, name: &str) -> TestCa {
        let ca = TestCa {
            dir: dir.to_path_buf(),
            name: name.to_string(),
        };
        let key = ca.path("ca-key.pem");
        openssl(&[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-days",
            "2",
            "-subj",
            &format!("/CN={name} test CA"),
            "-keyout",
            key.to_str().unwrap(),
            "-out",
            ca.cert().to_str().unwrap(),
        ]);
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        ca
    }

    fn path(&self, what: &str) -> PathBuf {
        self.dir.join(format!("{}-{what}", self.name))
    }

    /// The CA's certificate (PEM).
    pub fn cert(&self) -> PathBuf {
        self.path("ca.pem")
    }

    /// A certificate for `cn` with `sans` (openssl's subjectAltName text,
    /// e.g. `IP:127.0.0.1,DNS:localhost`): (certificate, key).
    pub fn issue(&self, cn: &str, sans: &str) -> (PathBuf, PathBuf) {
        let key = self.path(&format!("{cn}-key.pem"));
        let csr = self.path(&format!("{cn}.csr"));
        let cert = self.path(&format!("{cn}.pem"));
        let ext = self.path(&format!("{cn}.ext"));
        std::fs::write(&ext, format!("subjectAltName={sans}\n")).unwrap();
        openssl(&[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-subj",
            &format!("/CN={cn}"),
            "-keyout",
            key.to_str().unwrap(),
            "-out",
            csr.to_str().unwrap(),
        ]);
        openssl(&[
            "x509",
            "-req",
            "-in",
            csr.to_str().unwrap(),
            "-CA",
            self.cert().to_str().unwrap(),
            "-CAkey",
            self.path("ca-key.pem").to_str().unwrap(),
            "-set_serial",
            &serial(),
            "-days",
            "2",
            "-extfile",
            ext.to_str().unwrap(),
            "-out",
            cert.to_str().unwrap(),
        ]);
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        (cert, key)
    }

    /// A server certificate for `127.0.0.1` and `localhost`, in files
    /// named after `name` (tests running at once each take their own).
    pub fn server(&self, name: &str) -> (PathBuf, PathBuf) {
        self.issue(name, "IP:127.0.0.1,DNS:localhost")
    }
}

/// Two CAs, `one` and `two`, in a directory that lives as long as the test
/// binary, made on first use: what the TLS tests of every gateway share (a
/// server signed by `one`; a client certificate of `two` is "another CA").
pub fn cas() -> (&'static PathBuf, &'static TestCa, &'static TestCa) {
    static CAS: OnceLock<(PathBuf, TestCa, TestCa)> = OnceLock::new();
    let (dir, one, two) = CAS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        let one = TestCa::new(&dir, "one");
        let two = TestCa::new(&dir, "two");
        (dir, one, two)
    });
    (dir, one, two)
}

/// A listener's TLS settings.
pub fn settings(
    cert: &Path,
    key: &Path,
    client_ca: Option<PathBuf>,
    plaintext: bool,
) -> TlsSettings {
    TlsSettings {
        cert_file: cert.to_path_buf(),
        key_file: key.to_path_buf(),
        client_ca_file: client_ca,
        plaintext,
    }
}

/// A client configuration trusting `trusted`, presenting a certificate
/// named `name` that `signer` issued (or none).
pub fn client_config(
    trusted: &TestCa,
    signer: Option<&TestCa>,
    name: &str,
) -> Arc<rustls::ClientConfig> {
    let (cert_file, key_file) = match signer {
        Some(ca) => {
            let (cert, key) = ca.issue(name, "DNS:client");
            (Some(cert), Some(key))
        }
        None => (None, None),
    };
    basalt::tls::client_config(&TlsClientSettings {
        ca_file: trusted.cert(),
        cert_file,
        key_file,
    })
    .unwrap()
}
