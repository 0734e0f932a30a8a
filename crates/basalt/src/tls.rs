//! TLS settings every listener shares (docs/security.md, "TLS"): a PEM
//! certificate chain and key, an optional CA whose client certificates
//! the server requires, whether plaintext stays accepted on the same port
//! (HBase's `hbase.server.netty.tls.supportplaintext`, for a migration),
//! and the client side the cluster's own calls use.
//!
//! The server's files are read again when they change (their size or
//! modification time), at the next connection: a renewed certificate is
//! served without a restart. A renewal that does not load (a half-written
//! file) keeps the previous certificate and says why in the log.
//!
//! Every listener takes its connections through [`accept`]: as they come
//! without TLS; with TLS, after the handshake, under a deadline; or as they
//! come when plaintext is kept and their first byte is not a handshake's.
//!
//! rustls with the aws-lc-rs provider (the one object_store's HTTPS client
//! already builds); TLS 1.2 and 1.3 with rustls's safe defaults.

use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use parking_lot::Mutex;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use basalt_types::{Error, Result};

/// A listener's TLS settings (`[rpc.tls]` and the like).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsSettings {
    /// The server's certificate chain, PEM (the server's first).
    pub cert_file: PathBuf,
    /// The server's private key, PEM (PKCS#8, PKCS#1 or SEC1). Refused
    /// when anyone may read it.
    pub key_file: PathBuf,
    /// Require a client certificate signed by one of these CAs (PEM).
    /// HBase has no certificate-based identity: this only decides who may
    /// connect, it names no user.
    #[serde(default)]
    pub client_ca_file: Option<PathBuf>,
    /// Also accept plaintext connections on the same port (told apart by
    /// their first byte), as HBase's `supportplaintext` does, while
    /// clients move to TLS. Off by default.
    #[serde(default)]
    pub plaintext: bool,
}

/// The TLS settings the cluster's own calls (one process to another)
/// connect with (`[cluster_tls]`): the CA the servers' certificates are
/// checked against, and a client certificate when the servers require one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsClientSettings {
    /// The CA certificates (PEM) the servers' certificates must chain to.
    pub ca_file: PathBuf,
    /// This process's certificate chain (PEM), for servers that require one.
    #[serde(default)]
    pub cert_file: Option<PathBuf>,
    /// Its key (PEM).
    #[serde(default)]
    pub key_file: Option<PathBuf>,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

fn tls_error(file: &Path, what: &str, e: impl std::fmt::Display) -> Error {
    Error::invalid(format!("TLS: {what} {}: {e}", file.display()))
}

/// Every certificate of a PEM file; names the file when it has none.
fn certificates(file: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(file)
        .map_err(|e| tls_error(file, "cannot read the certificates of", e))?
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| tls_error(file, "cannot read the certificates of", e))?;
    if certs.is_empty() {
        return Err(tls_error(file, "no PEM certificate in", "empty"));
    }
    Ok(certs)
}

/// A private key, refused when the file is readable by anyone (mode
/// `o+r`): a key others can read is no secret.
fn private_key(file: &Path) -> Result<PrivateKeyDer<'static>> {
    refuse_world_readable(file)?;
    PrivateKeyDer::from_pem_file(file).map_err(|e| tls_error(file, "cannot read the key in", e))
}

/// Refuses a secret file others may read (docs/security.md).
pub fn refuse_world_readable(file: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(file)
        .map_err(|e| Error::io(file, e))?
        .permissions()
        .mode();
    if mode & 0o004 != 0 {
        return Err(Error::invalid(format!(
            "{} is readable by every user (mode {:o}): a key or keytab must not be; chmod o-r it",
            file.display(),
            mode & 0o777
        )));
    }
    Ok(())
}

fn roots(file: &Path) -> Result<RootCertStore> {
    let mut roots = RootCertStore::empty();
    for cert in certificates(file)? {
        roots
            .add(cert)
            .map_err(|e| tls_error(file, "a CA certificate is not usable in", e))?;
    }
    Ok(roots)
}

fn server_config(settings: &TlsSettings) -> Result<Arc<ServerConfig>> {
    let certs = certificates(&settings.cert_file)?;
    let key = private_key(&settings.key_file)?;
    let provider = provider();
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::invalid(format!("TLS: {e}")))?;
    let builder = match &settings.client_ca_file {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots(ca)?),
                provider,
            )
            .build()
            .map_err(|e| tls_error(ca, "cannot verify clients with", e))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder.with_single_cert(certs, key).map_err(|e| {
        tls_error(
            &settings.cert_file,
            "the certificate and key do not go together:",
            e,
        )
    })?;
    Ok(Arc::new(config))
}

/// What identifies a version of the files: each one's length and
/// modification time.
type Stamp = Vec<Option<(u64, SystemTime)>>;

fn stamp(settings: &TlsSettings) -> Stamp {
    std::iter::once(&settings.cert_file)
        .chain(std::iter::once(&settings.key_file))
        .chain(settings.client_ca_file.iter())
        .map(|file| {
            std::fs::metadata(file)
                .ok()
                .and_then(|m| Some((m.len(), m.modified().ok()?)))
        })
        .collect()
}

/// A listener's TLS: its settings and the configuration built from the
/// files as they are now.
#[derive(Debug)]
pub struct TlsServer {
    settings: TlsSettings,
    current: Mutex<(Stamp, Arc<ServerConfig>)>,
}

impl TlsServer {
    /// Loads the files; a start with unusable files fails here, naming
    /// the file.
    pub fn load(settings: TlsSettings) -> Result<TlsServer> {
        let config = server_config(&settings)?;
        Ok(TlsServer {
            current: Mutex::new((stamp(&settings), config)),
            settings,
        })
    }

    /// Whether plaintext connections are accepted too.
    pub fn accepts_plaintext(&self) -> bool {
        self.settings.plaintext
    }

    /// The configuration for a new connection: the files read again if
    /// they changed since the last one.
    pub fn config(&self) -> Arc<ServerConfig> {
        let now = stamp(&self.settings);
        let mut current = self.current.lock();
        if current.0 != now {
            match server_config(&self.settings) {
                Ok(config) => {
                    tracing::info!(cert = %self.settings.cert_file.display(), "TLS certificate reloaded");
                    *current = (now, config);
                }
                Err(e) => {
                    // Kept as the stamp, so a half-written file is not
                    // retried on every connection; the next change is.
                    tracing::warn!(error = %e, "TLS files changed but do not load: the previous certificate stays");
                    current.0 = now;
                }
            }
        }
        Arc::clone(&current.1)
    }
}

/// Whether a connection's first byte starts a TLS handshake (a TLS
/// record of type handshake, 22), which no plaintext request of a gateway
/// starts with: HBase's preamble (`H`), an HTTP method (a capital letter),
/// a Thrift message (binary `0x80`, compact `0x82`, or a frame length's
/// first byte, 0 below 16 MiB: 22 would take a frame of 352 MiB, past any
/// `max_frame_bytes` worth having).
pub fn starts_tls(first_byte: u8) -> bool {
    first_byte == 0x16
}

/// A connection as a listener serves it: as it came, or inside TLS. The
/// gateways serve either through the same code, generic over the stream;
/// a plaintext connection stays a bare `TcpStream`, as fast as without
/// TLS.
#[derive(Debug)]
pub enum Accepted {
    /// No TLS configured, or a plaintext client where plaintext is kept.
    Plain(TcpStream),
    /// After a completed handshake.
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

impl Accepted {
    /// Whether the connection speaks TLS.
    pub fn is_tls(&self) -> bool {
        matches!(self, Accepted::Tls(_))
    }
}

/// Why a connection was not accepted.
#[derive(Debug)]
pub enum Refused {
    /// The handshake failed: not TLS, an unknown CA, no client certificate
    /// where one is required, the client gone.
    Handshake(io::Error),
    /// No handshake within the deadline.
    TimedOut,
}

impl Refused {
    /// The reason a listener's refusal log names.
    pub fn reason(&self) -> &'static str {
        match self {
            Refused::Handshake(_) => "TLS handshake failed",
            Refused::TimedOut => "TLS handshake timed out",
        }
    }
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Handshake(e) => write!(f, "TLS handshake: {e}"),
            Refused::TimedOut => f.write_str("TLS handshake timed out"),
        }
    }
}

impl std::error::Error for Refused {}

impl From<Refused> for io::Error {
    fn from(refused: Refused) -> io::Error {
        match refused {
            Refused::Handshake(_) => {
                io::Error::new(io::ErrorKind::InvalidData, refused.to_string())
            }
            Refused::TimedOut => io::Error::new(io::ErrorKind::TimedOut, refused.to_string()),
        }
    }
}

/// Takes a new connection as the listener's TLS says: without TLS as it
/// is; with TLS, after the handshake, which must finish within `limit`
/// (a client that sends nothing gives its slot back); with `plaintext`
/// kept, as it is when its first byte (also awaited within `limit`) is not
/// a handshake's.
pub async fn accept(
    tls: Option<&TlsServer>,
    stream: TcpStream,
    limit: Duration,
) -> std::result::Result<Accepted, Refused> {
    let Some(tls) = tls else {
        return Ok(Accepted::Plain(stream));
    };
    let handshake = async {
        if tls.accepts_plaintext() {
            let mut first = [0u8; 1];
            // A client that closes at once (0 bytes) or fails goes on to
            // the handshake, which says so.
            if matches!(stream.peek(&mut first).await, Ok(1)) && !starts_tls(first[0]) {
                return Ok(Accepted::Plain(stream));
            }
        }
        tokio_rustls::TlsAcceptor::from(tls.config())
            .accept(stream)
            .await
            .map(|stream| Accepted::Tls(Box::new(stream)))
            .map_err(Refused::Handshake)
    };
    tokio::time::timeout(limit, handshake)
        .await
        .unwrap_or(Err(Refused::TimedOut))
}

impl AsyncRead for Accepted {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Accepted::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Accepted::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Accepted {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Accepted::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Accepted::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Accepted::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Accepted::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Accepted::Plain(s) => s.is_write_vectored(),
            Accepted::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Accepted::Plain(s) => Pin::new(s).poll_flush(cx),
            Accepted::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Accepted::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Accepted::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// The client configuration of the cluster's own calls.
pub fn client_config(settings: &TlsClientSettings) -> Result<Arc<ClientConfig>> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::invalid(format!("TLS: {e}")))?
        .with_root_certificates(roots(&settings.ca_file)?);
    let config = match (&settings.cert_file, &settings.key_file) {
        (Some(cert), Some(key)) => builder
            .with_client_auth_cert(certificates(cert)?, private_key(key)?)
            .map_err(|e| {
                tls_error(
                    cert,
                    "the client certificate and key do not go together:",
                    e,
                )
            })?,
        (None, None) => builder.with_no_client_auth(),
        _ => {
            return Err(Error::invalid(
                "TLS: a client certificate needs both cert_file and key_file",
            ))
        }
    };
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn garbage_and_missing_files_are_refused_with_the_file_named() {
        let dir = tempfile::tempdir().unwrap();
        let cert = dir.path().join("cert.pem");
        let key = dir.path().join("key.pem");
        std::fs::write(
            &cert,
            "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        std::fs::write(&key, "garbage").unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        let settings = TlsSettings {
            cert_file: cert.clone(),
            key_file: key.clone(),
            client_ca_file: None,
            plaintext: false,
        };
        // Garbage in the files: refused, naming the one that failed.
        let error = TlsServer::load(settings.clone()).unwrap_err().to_string();
        assert!(
            error.contains("cert.pem") || error.contains("key.pem"),
            "{error}"
        );
        // No certificate at all.
        std::fs::write(&cert, "").unwrap();
        let error = TlsServer::load(settings.clone()).unwrap_err().to_string();
        assert!(
            error.contains("no PEM certificate") && error.contains("cert.pem"),
            "{error}"
        );
        // A file that is not there.
        let missing = TlsSettings {
            cert_file: dir.path().join("absent.pem"),
            ..settings
        };
        let error = TlsServer::load(missing).unwrap_err().to_string();
        assert!(error.contains("absent.pem"), "{error}");
    }

    #[test]
    fn a_key_anyone_may_read_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("key.pem");
        std::fs::write(&key, "x").unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        let error = refuse_world_readable(&key).unwrap_err().to_string();
        assert!(
            error.contains("readable by every user (mode 644)"),
            "{error}"
        );
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o640)).unwrap();
        refuse_world_readable(&key).unwrap();
    }

    #[test]
    fn only_a_handshake_record_starts_tls() {
        assert!(starts_tls(0x16));
        assert!(!starts_tls(b'H'));
        assert!(!starts_tls(b'R'));
    }
}
