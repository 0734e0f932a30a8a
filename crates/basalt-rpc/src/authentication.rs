//! Who a native RPC connection's client is: HBase's SIMPLE method (the
//! connection header names the user) or Kerberos (SASL GSSAPI, RFC 4752),
//! negotiated right after the preamble as HBase 2.6's `ServerRpcConnection`
//! does (docs/native-rpc.md, "Authentication"):
//!
//! | security | preamble's method | answer |
//! |---|---|---|
//! | off | SIMPLE | nothing: the header follows |
//! | off | KERBEROS, DIGEST | `SWITCH_TO_SIMPLE_AUTH`; the client's first token is read and dropped, then SIMPLE |
//! | kerberos | SIMPLE | `AccessDeniedException` and close, unless `allow_simple_fallback` |
//! | kerberos | KERBEROS | the SASL exchange; then, for `integrity` and `privacy`, every byte each way travels wrapped |
//! | kerberos | DIGEST | a SASL error (no delegation tokens here) and close |
//!
//! During the exchange the client sends `u32 length, token` and the
//! server answers `u32 0 (SUCCESS), u32 length, token`, or `u32 1
//! (ERROR)` with an exception's class and message, then closes.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use basalt::SecurityOptions;
use basalt_kerberos::{
    Acceptor, AuthToLocal, ProxyUsers, Qop, SaslServer, SaslStep, SecurityLayer,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream};

use crate::error::RpcError;
use crate::frame::{self, AuthMethod, NO_CALL};

/// The exception class HBase's server names when SASL fails.
const SASL_EXCEPTION: &str = "javax.security.sasl.SaslException";

/// Bytes of plaintext wrapped into one token on the way out: whatever a
/// writer flushed, up to this.
const WRAP_CHUNK_BYTES: usize = 64 << 10;

/// The Kerberos side of a server with `authentication = "kerberos"`.
#[derive(Debug)]
pub(crate) struct KerberosServer {
    acceptor: Acceptor,
    offered: Vec<Qop>,
    rules: AuthToLocal,
    /// Who may act for whom (`[security.proxy_users]`).
    pub(crate) proxy: ProxyUsers,
    allow_simple_fallback: bool,
}

impl KerberosServer {
    /// The acceptor for `security`'s principal on `host`, when Kerberos
    /// is on. Fails (and the server does not start) when the principal's
    /// key is not in the keytab, or this build has no Kerberos.
    pub(crate) fn new(
        security: &SecurityOptions,
        host: &str,
    ) -> io::Result<Option<KerberosServer>> {
        let invalid = |e: String| io::Error::new(io::ErrorKind::InvalidInput, e);
        let Some(settings) = security.kerberos().map_err(|e| invalid(e.to_string()))? else {
            return Ok(None);
        };
        let rules = settings.validate().map_err(|e| invalid(e.to_string()))?;
        let proxy = ProxyUsers::new(&security.proxy_users).map_err(|e| invalid(e.to_string()))?;
        let principal = settings.server_principal(host);
        let acceptor = Acceptor::new(&principal).map_err(|e| invalid(e.to_string()))?;
        tracing::info!(
            principal = %principal,
            protection = %settings.rpc_protection.iter().map(|q| q.name()).collect::<Vec<_>>().join(","),
            simple_fallback = settings.allow_simple_fallback,
            "native RPC authenticates clients with Kerberos"
        );
        Ok(Some(KerberosServer {
            acceptor,
            offered: settings.rpc_protection.clone(),
            rules,
            proxy,
            allow_simple_fallback: settings.allow_simple_fallback,
        }))
    }

    /// The principal the server runs as.
    pub(crate) fn principal(&self) -> &str {
        self.acceptor.principal()
    }

    /// The short name grants are made to, of `principal`.
    pub(crate) fn short_name(&self, principal: &str) -> Result<String, String> {
        self.rules.short_name(principal).map_err(|e| e.to_string())
    }
}

/// Who a connection's client proved to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Authenticated {
    /// SIMPLE: the connection header names the user.
    Simple,
    /// Kerberos: the principal, and its short name.
    Kerberos { principal: String, user: String },
}

/// The outcome of the negotiation.
#[derive(Debug)]
pub(crate) enum Negotiated {
    /// Bytes go on as they are.
    Plain(Authenticated),
    /// Every byte from now on is wrapped by the layer.
    Wrapped(Authenticated, SecurityLayer),
}

/// Reads `u32 length, bytes` of at most `limit` bytes.
async fn read_token<R: AsyncRead + Unpin>(reader: &mut R, limit: usize) -> io::Result<Vec<u8>> {
    let length = reader.read_u32().await? as usize;
    if length > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a SASL token of {length} bytes is over the {limit}-byte limit"),
        ));
    }
    let mut token = vec![0u8; length];
    reader.read_exact(&mut token).await?;
    Ok(token)
}

async fn refuse<W: AsyncWrite + Unpin>(writer: &mut W, bytes: &[u8], why: String) -> io::Error {
    let _ = writer.write_all(bytes).await;
    let _ = writer.flush().await;
    io::Error::new(io::ErrorKind::PermissionDenied, why)
}

/// Settles who the client is after its preamble named `method`, within
/// `deadline`. An error has already been answered to the client.
pub(crate) async fn negotiate<R, W>(
    reader: &mut R,
    writer: &mut W,
    method: AuthMethod,
    kerberos: Option<&KerberosServer>,
    deadline: Option<Duration>,
) -> io::Result<Negotiated>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let exchange = negotiate_now(reader, writer, method, kerberos);
    match deadline {
        Some(deadline) => tokio::time::timeout(deadline, exchange)
            .await
            .unwrap_or_else(|_| {
                Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the authentication did not finish within the handshake deadline",
                ))
            }),
        None => exchange.await,
    }
}

async fn negotiate_now<R, W>(
    reader: &mut R,
    writer: &mut W,
    method: AuthMethod,
    kerberos: Option<&KerberosServer>,
) -> io::Result<Negotiated>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let Some(kerberos) = kerberos else {
        if method != AuthMethod::Simple {
            // HBase's answer when security is off: go on as SIMPLE, after
            // dropping the token the client sent without waiting.
            writer.write_all(&frame::SWITCH_TO_SIMPLE_AUTH).await?;
            writer.flush().await?;
            read_token(reader, frame::MAX_SASL_TOKEN_BYTES).await?;
        }
        return Ok(Negotiated::Plain(Authenticated::Simple));
    };
    match method {
        AuthMethod::Simple if kerberos.allow_simple_fallback => {
            Ok(Negotiated::Plain(Authenticated::Simple))
        }
        AuthMethod::Simple => {
            let error = RpcError::new(
                basalt::ErrorKind::AccessDenied.java_class(),
                "Authentication is required: this server takes Kerberos (SASL GSSAPI) only"
                    .to_string(),
                true,
            );
            let answer = frame::encode_response(NO_CALL, Err(&error));
            Err(refuse(writer, &answer, error.message).await)
        }
        AuthMethod::Digest => {
            let why =
                "DIGEST-MD5 (HBase delegation tokens) is not supported: authenticate with Kerberos";
            Err(refuse(
                writer,
                &frame::encode_sasl_error(SASL_EXCEPTION, why),
                why.to_string(),
            )
            .await)
        }
        AuthMethod::Kerberos => kerberos_exchange(reader, writer, kerberos).await,
    }
}

async fn kerberos_exchange<R, W>(
    reader: &mut R,
    writer: &mut W,
    kerberos: &KerberosServer,
) -> io::Result<Negotiated>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut server = SaslServer::new(kerberos.acceptor.context(), &kerberos.offered)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    loop {
        let token = read_token(reader, frame::MAX_SASL_TOKEN_BYTES).await?;
        // Accepting reads the keytab and the replay cache: off the
        // connection's task.
        let (returned, step) = tokio::task::spawn_blocking(move || {
            let step = server.step(&token);
            (server, step)
        })
        .await
        .map_err(|e| io::Error::other(format!("the SASL step stopped: {e}")))?;
        server = returned;
        match step {
            Ok(SaslStep::Send(token)) => {
                writer
                    .write_all(&frame::encode_sasl_challenge(&token))
                    .await?;
                writer.flush().await?;
            }
            Ok(SaslStep::Wait) => {}
            Ok(SaslStep::Complete { negotiated, .. }) => {
                let user = match kerberos.short_name(&negotiated.principal) {
                    Ok(user) => user,
                    Err(why) => {
                        let message = format!(
                            "{} authenticated, and no user name maps to it: {why}",
                            negotiated.principal
                        );
                        return Err(refuse(
                            writer,
                            &frame::encode_sasl_error(SASL_EXCEPTION, &message),
                            message,
                        )
                        .await);
                    }
                };
                let who = Authenticated::Kerberos {
                    principal: negotiated.principal,
                    user,
                };
                return Ok(if negotiated.layer.qop().wraps() {
                    Negotiated::Wrapped(who, negotiated.layer)
                } else {
                    Negotiated::Plain(who)
                });
            }
            Err(e) => {
                let message = e.to_string();
                tracing::info!(target: "basalt::security::audit", error = %message, "native RPC: Kerberos authentication refused");
                return Err(refuse(
                    writer,
                    &frame::encode_sasl_error(SASL_EXCEPTION, &message),
                    message,
                )
                .await);
            }
        }
    }
}

/// The plaintext side of a wrapped connection: what the connection reads
/// and writes, while two tasks unwrap what arrives (`u32 length, token`)
/// and wrap what leaves. `max_token` bounds one arriving token; a token
/// that does not unwrap ends the connection.
pub(crate) fn wrap_streams<R, W>(
    mut reader: R,
    mut writer: W,
    layer: SecurityLayer,
    max_token: usize,
) -> DuplexStream
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (plain, inner) = tokio::io::duplex(WRAP_CHUNK_BYTES * 2);
    let (mut inner_read, mut inner_write) = tokio::io::split(inner);
    // One context numbers messages both ways: one lock, never held across
    // an await.
    let layer = Arc::new(Mutex::new(layer));
    let unwrapping = Arc::clone(&layer);
    tokio::spawn(async move {
        loop {
            let token = match read_token(&mut reader, max_token).await {
                Ok(token) => token,
                Err(_) => break,
            };
            let unwrapped = match unwrapping.lock() {
                Ok(mut layer) => layer.unwrap(&token),
                Err(_) => break,
            };
            match unwrapped {
                Ok(plain) => {
                    if inner_write.write_all(&plain).await.is_err() {
                        break;
                    }
                }
                Err(e) => {
                    tracing::info!(target: "basalt::security::audit", error = %e, "native RPC: a wrapped message was refused; closing the connection");
                    break;
                }
            }
        }
        let _ = inner_write.shutdown().await;
    });
    tokio::spawn(async move {
        let mut chunk = vec![0u8; WRAP_CHUNK_BYTES];
        loop {
            let n = match inner_read.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let wrapped = match layer.lock() {
                Ok(mut layer) => layer.wrap(&chunk[..n]),
                Err(_) => break,
            };
            let Ok(token) = wrapped else { break };
            let mut out = Vec::with_capacity(4 + token.len());
            out.extend_from_slice(&(token.len() as u32).to_be_bytes());
            out.extend_from_slice(&token);
            if writer.write_all(&out).await.is_err() || writer.flush().await.is_err() {
                break;
            }
        }
        let _ = writer.shutdown().await;
    });
    plain
}
