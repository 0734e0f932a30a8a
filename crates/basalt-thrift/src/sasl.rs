//! Kerberos on Thrift: the SASL transport of Apache Thrift
//! (`TSaslServerTransport`) with the GSSAPI mechanism, as HBase's Thrift1
//! and Thrift2 servers run it with `hbase.thrift.security.qop` set.
//!
//! Negotiation messages are `u8 status, u32 length, payload`; the status
//! is one of [`START`], [`OK`], [`BAD`], [`ERROR`], [`COMPLETE`]:
//!
//! 1. the client sends `START "GSSAPI"` and, without waiting, `OK` with
//!    its first Kerberos token;
//! 2. each client `OK` (or `COMPLETE`) token is one step of SASL GSSAPI
//!    (RFC 4752, `basalt_kerberos::SaslServer`); the server answers `OK`
//!    with its token while the exchange goes on, and `COMPLETE` (empty)
//!    once the client's choice of protection has settled it;
//! 3. a mechanism other than GSSAPI is answered `BAD "Unsupported
//!    mechanism type X"`, a refused ticket `BAD <why>`, a message out of
//!    turn `ERROR <why>`; the server then closes.
//!
//! After that every message either way is `u32 length, data`: `data` the
//! bytes as they are with `authentication`, wrapped by the Kerberos
//! context with `integrity` and `privacy`. The data of consecutive
//! messages is one byte stream, in which the ordinary Thrift protocol
//! runs ([`SaslStream`]).
//!
//! The caller is the principal cut at its first `/` or `@` (`alice` of
//! `alice@REALM`), as HBase's Thrift server names it
//! (`SecurityUtil.getUserFromPrincipal`): not through `auth_to_local`.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use basalt::SecurityOptions;
use basalt_kerberos::{Acceptor, Qop, SaslServer, SaslStep, SecurityLayer};
use bytes::{Buf, BufMut, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};

/// The client opens the exchange, naming its mechanism.
pub const START: u8 = 1;
/// A step of the exchange.
pub const OK: u8 = 2;
/// The peer's credentials or mechanism are refused.
pub const BAD: u8 = 3;
/// The exchange broke (a message out of turn).
pub const ERROR: u8 = 4;
/// The exchange is over.
pub const COMPLETE: u8 = 5;

/// The only mechanism served.
pub const GSSAPI: &[u8] = b"GSSAPI";

/// Largest negotiation message: Kerberos tokens are a few kilobytes (tens
/// with a large PAC); Thrift's own limit (100 MB) is far more than any
/// needs.
pub const MAX_NEGOTIATION_BYTES: usize = 1 << 20;

/// Plaintext framed (and wrapped) at once on the way out: what a reply
/// flushed, up to this.
const WRAP_CHUNK_BYTES: usize = 64 << 10;

/// Room a wrapped message takes beyond its plaintext (the Kerberos
/// token's header, checksum and padding, generously).
const WRAP_OVERHEAD: usize = 4 << 10;

/// Whether a connection's first five bytes open a SASL exchange: `START`,
/// then the length of a mechanism name (1 to 64 bytes). No Thrift message
/// starts so (a frame's fifth byte is a message's first: 0x80, 0x82 or
/// 0x00).
pub fn is_start(first: &[u8; 5]) -> bool {
    first[0] == START && first[1..4] == [0, 0, 0] && (1..=64).contains(&first[4])
}

/// A negotiation message, encoded.
pub fn message(status: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(5 + payload.len());
    out.push(status);
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// The name of a status, for messages.
pub fn status_name(status: u8) -> String {
    match status {
        START => "START".into(),
        OK => "OK".into(),
        BAD => "BAD".into(),
        ERROR => "ERROR".into(),
        COMPLETE => "COMPLETE".into(),
        other => format!("{other} (unknown)"),
    }
}

/// The user a principal acts as on Thrift: its first component, realm
/// and instance cut off (HBase's `SecurityUtil.getUserFromPrincipal`).
pub fn thrift_user(principal: &str) -> &str {
    let end = principal.find(['/', '@']).unwrap_or(principal.len());
    &principal[..end]
}

/// The Kerberos side of a Thrift server with `authentication =
/// "kerberos"`.
#[derive(Debug)]
pub(crate) struct ThriftKerberos {
    acceptor: Acceptor,
    protection: Qop,
}

impl ThriftKerberos {
    /// The acceptor for the Thrift principal (`_HOST` = this machine's
    /// host name), when Kerberos is on; an error (the server does not
    /// start) when its key is not in the keytab.
    pub(crate) fn new(security: &SecurityOptions, server: &str) -> io::Result<Option<Self>> {
        let invalid = |e: String| io::Error::new(io::ErrorKind::InvalidInput, e);
        let Some(settings) = security.kerberos().map_err(|e| invalid(e.to_string()))? else {
            return Ok(None);
        };
        settings.validate().map_err(|e| invalid(e.to_string()))?;
        let principal = settings.thrift_principal(&basalt_kerberos::local_hostname());
        let acceptor = Acceptor::new(&principal)
            .map_err(|e| invalid(format!("{server}: Kerberos (SASL GSSAPI): {e}")))?;
        tracing::info!(
            %principal,
            protection = settings.thrift_protection.name(),
            server,
            "Thrift clients authenticate with Kerberos (SASL GSSAPI); others are refused"
        );
        Ok(Some(ThriftKerberos {
            acceptor,
            protection: settings.thrift_protection,
        }))
    }

    /// A fresh server side of the exchange.
    pub(crate) fn exchange(&self) -> io::Result<SaslServer> {
        SaslServer::new(self.acceptor.context(), &[self.protection])
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))
    }
}

/// What a finished negotiation step asks of the server.
pub(crate) enum Answer {
    /// Send this message and read the client's next.
    Continue(Vec<u8>),
    /// Send this message: the exchange is complete.
    Done(Vec<u8>, basalt_kerberos::Negotiated),
    /// Send this message (`BAD` or `ERROR`) and close.
    Refuse(Vec<u8>, String),
}

/// Checks a client message of the exchange after `START` and runs its
/// step (the caller runs this off the async workers: it reads the keytab
/// and the replay cache).
pub(crate) fn step(server: &mut SaslServer, status: u8, payload: &[u8]) -> Answer {
    if status != OK && status != COMPLETE {
        let why = format!("Expected COMPLETE or OK, got {}", status_name(status));
        return Answer::Refuse(message(ERROR, why.as_bytes()), why);
    }
    match server.step(payload) {
        Ok(SaslStep::Send(token)) => Answer::Continue(message(OK, &token)),
        Ok(SaslStep::Wait) => Answer::Continue(message(OK, &[])),
        Ok(SaslStep::Complete { negotiated, .. }) => {
            Answer::Done(message(COMPLETE, &[]), negotiated)
        }
        Err(e) => {
            let why = e.to_string();
            Answer::Refuse(message(BAD, why.as_bytes()), why)
        }
    }
}

/// The byte stream after the exchange: reads unwrap `u32 length, data`
/// messages, writes are framed (and wrapped) when flushed, or every
/// [`WRAP_CHUNK_BYTES`]. All state lives here, so a read or write dropped
/// half-way (a timeout, shutdown) loses nothing.
pub(crate) struct SaslStream<S> {
    inner: S,
    layer: SecurityLayer,
    /// Largest message accepted from the peer.
    max_message: usize,
    /// Bytes read, not yet a whole message.
    raw: BytesMut,
    /// Unwrapped bytes not yet handed out.
    plain: BytesMut,
    /// The peer closed.
    eof: bool,
    /// Plaintext written, not yet framed.
    pending: BytesMut,
    /// Framed messages not yet written.
    out: BytesMut,
    scratch: Box<[u8]>,
}

impl<S> std::fmt::Debug for SaslStream<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslStream")
            .field("protection", &self.layer.qop())
            .field("buffered_in", &(self.raw.len() + self.plain.len()))
            .field("buffered_out", &(self.pending.len() + self.out.len()))
            .finish_non_exhaustive()
    }
}

impl<S> SaslStream<S> {
    /// The stream over `inner`, protected by `layer`; `raw` holds bytes
    /// already read past the exchange. `max_plain` is the largest message
    /// the server takes (a wrapped one may be a little larger).
    pub(crate) fn new(inner: S, layer: SecurityLayer, raw: BytesMut, max_plain: usize) -> Self {
        SaslStream {
            inner,
            layer,
            max_message: max_plain.saturating_add(WRAP_OVERHEAD),
            raw,
            plain: BytesMut::new(),
            eof: false,
            pending: BytesMut::new(),
            out: BytesMut::new(),
            scratch: vec![0u8; 16 << 10].into_boxed_slice(),
        }
    }

    /// Unwraps the next whole message in `raw`, if there is one.
    fn next_message(&mut self) -> io::Result<bool> {
        if self.raw.len() < 4 {
            return Ok(false);
        }
        let len = u32::from_be_bytes([self.raw[0], self.raw[1], self.raw[2], self.raw[3]]) as usize;
        if len > self.max_message {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "a SASL message of {len} bytes is over the {}-byte limit (max_frame_bytes)",
                    self.max_message
                ),
            ));
        }
        if self.raw.len() < 4 + len {
            return Ok(false);
        }
        self.raw.advance(4);
        let message = self.raw.split_to(len);
        let plain = self.layer.unwrap(&message).map_err(|e| {
            tracing::info!(target: basalt::access::AUDIT_TARGET, error = %e, "Thrift: a wrapped message was refused; closing the connection");
            io::Error::new(io::ErrorKind::InvalidData, e.to_string())
        })?;
        self.plain.extend_from_slice(&plain);
        Ok(true)
    }

    /// Frames (and wraps) what was written and not yet framed.
    fn seal(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let token = self
            .layer
            .wrap(&self.pending)
            .map_err(|e| io::Error::other(e.to_string()))?;
        let len = u32::try_from(token.len())
            .map_err(|_| io::Error::other("a wrapped message over 4 GiB"))?;
        self.out.reserve(4 + token.len());
        self.out.put_u32(len);
        self.out.extend_from_slice(&token);
        self.pending.clear();
        Ok(())
    }
}

impl<S: AsyncWrite + Unpin> SaslStream<S> {
    /// Writes framed messages out until none is left.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.out.is_empty() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.out))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.out.advance(n);
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for SaslStream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if !this.plain.is_empty() {
                let n = this.plain.len().min(buf.remaining());
                buf.put_slice(&this.plain[..n]);
                this.plain.advance(n);
                return Poll::Ready(Ok(()));
            }
            if this.next_message()? {
                continue;
            }
            if this.eof {
                return Poll::Ready(if this.raw.is_empty() {
                    Ok(())
                } else {
                    Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "closed inside a SASL message",
                    ))
                });
            }
            let mut read = ReadBuf::new(&mut this.scratch);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
            if read.filled().is_empty() {
                this.eof = true;
            } else {
                this.raw.extend_from_slice(read.filled());
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for SaslStream<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        // At most one framed chunk waits for the socket and one fills
        // behind it: a peer that reads nothing holds the writer back.
        if !this.out.is_empty()
            && this.poll_drain(cx)?.is_pending()
            && this.pending.len() >= WRAP_CHUNK_BYTES
        {
            return Poll::Pending;
        }
        if this.pending.len() >= WRAP_CHUNK_BYTES {
            // `out` is empty here: it drained above.
            this.seal()?;
            if let Poll::Ready(Err(e)) = this.poll_drain(cx) {
                return Poll::Ready(Err(e));
            }
        }
        let room = WRAP_CHUNK_BYTES.saturating_sub(this.pending.len()).max(1);
        let n = data.len().min(room);
        this.pending.extend_from_slice(&data[..n]);
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.seal()?;
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.as_mut().poll_flush(cx))?;
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// Sends a negotiation message and flushes it.
pub(crate) async fn send<S: AsyncWrite + Unpin>(stream: &mut S, bytes: &[u8]) -> io::Result<()> {
    stream.write_all(bytes).await?;
    stream.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sasl_start_is_told_from_every_thrift_wire() {
        let start: [u8; 5] = [1, 0, 0, 0, 6];
        assert!(is_start(&start));
        assert!(crate::protocol::detect_wire(&start).is_none());
        // Framed messages whose length begins with 1: their fifth byte is
        // a message's first.
        for fifth in [0x80, 0x82, 0x00] {
            assert!(!is_start(&[1, 0, 0, 0, fifth]));
        }
        assert!(!is_start(&[1, 0, 0, 1, 6]));
        assert!(!is_start(&[0x80, 1, 0, 0, 6]));
    }

    #[test]
    fn the_thrift_user_is_the_principal_cut_at_slash_or_at() {
        assert_eq!(thrift_user("alice@R"), "alice");
        assert_eq!(thrift_user("alice/admin@R"), "alice");
        assert_eq!(thrift_user("alice@OTHER.REALM"), "alice");
        assert_eq!(thrift_user("bob"), "bob");
    }

    #[test]
    fn negotiation_messages_are_status_length_payload() {
        assert_eq!(message(START, GSSAPI), b"\x01\x00\x00\x00\x06GSSAPI");
        assert_eq!(message(COMPLETE, &[]), b"\x05\x00\x00\x00\x00");
        assert_eq!(status_name(BAD), "BAD");
        assert_eq!(status_name(9), "9 (unknown)");
    }
}
