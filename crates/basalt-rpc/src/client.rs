//! A small blocking client for HBase's native RPC: Basalt's own tests and
//! tools use it to speak to a server exactly as HBase's clients do
//! (preamble, connection header, framed calls, cell blocks).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use basalt_types::Cell;
use bytes::{BufMut, Bytes};
use prost::Message;

use crate::cellblock;
use crate::error::RpcError;
use crate::frame;
use crate::proto::rpc::{ConnectionHeader, UserInformation};

/// A connection to one service of a server.
#[derive(Debug)]
pub struct RpcClient {
    stream: Transport,
    next_call: u32,
    cell_blocks: bool,
}

/// A successful answer: the message and the cells of its cell block.
#[derive(Debug)]
pub struct Answer {
    /// The answer message's bytes.
    pub message: Bytes,
    /// Cells of the cell block (empty without one).
    pub cells: Vec<Cell>,
}

impl Answer {
    /// Decodes the message as `M`.
    pub fn decode<M: Message + Default>(&self) -> Result<M, RpcError> {
        M::decode(self.message.clone()).map_err(|e| RpcError::undecodable("answer", e))
    }
}

/// A call that did not answer: the server's exception, or a transport
/// failure (as `java.io.IOException`).
pub type CallResult = Result<Answer, RpcError>;

/// A connection's bytes: plain TCP, or TLS over it, either possibly
/// wrapped by a SASL security layer (Kerberos `integrity` or `privacy`).
#[derive(Debug)]
enum Transport {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
    Wrapped(Box<Wrapped>),
}

/// A transport whose bytes each way travel as `u32 length, wrapped token`.
#[derive(Debug)]
struct Wrapped {
    inner: Transport,
    layer: basalt_kerberos::SecurityLayer,
    /// Unwrapped bytes not read yet.
    pending: Vec<u8>,
    read_at: usize,
}

impl Transport {
    fn tcp(&self) -> &TcpStream {
        match self {
            Transport::Plain(s) => s,
            Transport::Tls(s) => s.get_ref(),
            Transport::Wrapped(w) => w.inner.tcp(),
        }
    }
}

fn layer_error(e: basalt_kerberos::KerberosError) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string())
}

impl Read for Transport {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Transport::Plain(s) => s.read(buf),
            Transport::Tls(s) => s.read(buf),
            Transport::Wrapped(w) => {
                while w.read_at == w.pending.len() {
                    let mut len = [0u8; 4];
                    w.inner.read_exact(&mut len)?;
                    let len = u32::from_be_bytes(len) as usize;
                    if len > MAX_WRAPPED_TOKEN_BYTES {
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::InvalidData,
                            format!(
                                "a wrapped token of {len} bytes is over {MAX_WRAPPED_TOKEN_BYTES}"
                            ),
                        ));
                    }
                    let mut token = vec![0u8; len];
                    w.inner.read_exact(&mut token)?;
                    w.pending = w.layer.unwrap(&token).map_err(layer_error)?;
                    w.read_at = 0;
                }
                let n = buf.len().min(w.pending.len() - w.read_at);
                buf[..n].copy_from_slice(&w.pending[w.read_at..w.read_at + n]);
                w.read_at += n;
                Ok(n)
            }
        }
    }
}

impl Write for Transport {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Transport::Plain(s) => s.write(buf),
            Transport::Tls(s) => s.write(buf),
            Transport::Wrapped(w) => {
                // One token per write: the peer reads a stream of them.
                let token = w.layer.wrap(buf).map_err(layer_error)?;
                let mut out = Vec::with_capacity(4 + token.len());
                out.put_u32(token.len() as u32);
                out.extend_from_slice(&token);
                w.inner.write_all(&out)?;
                Ok(buf.len())
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Transport::Plain(s) => s.flush(),
            Transport::Tls(s) => s.flush(),
            Transport::Wrapped(w) => w.inner.flush(),
        }
    }
}

/// Largest wrapped token this client takes from a server.
const MAX_WRAPPED_TOKEN_BYTES: usize = 512 << 20;

/// How this process's connections authenticate with Kerberos, once set.
static PROCESS_KERBEROS: std::sync::OnceLock<KerberosClient> = std::sync::OnceLock::new();

/// Kerberos for a client connection: whom to expect and which protections
/// to take (the first of `protection` the server offers).
#[derive(Debug, Clone)]
pub struct KerberosClient {
    /// The server principal expected, `hbase/_HOST@REALM` or a full one.
    /// With `_HOST`, the connection first asks the server its principal
    /// (the `Securi` preamble) and accepts it when only the host differs;
    /// mutual authentication then proves the server holds its key.
    pub server_principal: String,
    /// Protections in order of preference.
    pub protection: Vec<basalt_kerberos::Qop>,
    /// Whom to authenticate as (a principal with a key in the client
    /// keytab or a ticket in the cache); `None`: the default principal
    /// (the process's own).
    pub client_principal: Option<String>,
}

/// Makes every later connection of this process authenticate with
/// Kerberos as this process's principal (its client keytab): a server
/// with `authentication = "kerberos"` sets it, so the cluster's own calls
/// pass the other servers' checks. The first value set stays.
pub fn set_process_kerberos(client: KerberosClient) {
    let _ = PROCESS_KERBEROS.set(client);
}

/// The TLS every connection of this process makes, once set.
static PROCESS_TLS: std::sync::OnceLock<Arc<rustls::ClientConfig>> = std::sync::OnceLock::new();

/// Makes every later connection of this process TLS with `config`: a
/// server whose RPC ports take TLS only (`[rpc.tls]`) sets it from
/// `[cluster_tls]` so the cluster's own calls reach the other processes.
/// The servers' certificates must name the address connected to (an IP
/// SAN). The first value set stays.
pub fn set_process_tls(config: Arc<rustls::ClientConfig>) {
    let _ = PROCESS_TLS.set(config);
}

/// Wraps `stream` in TLS when this process's connections use it.
fn transport(stream: TcpStream) -> Result<Transport, RpcError> {
    let Some(config) = PROCESS_TLS.get() else {
        return Ok(Transport::Plain(stream));
    };
    let ip = stream.peer_addr().map_err(io_error)?.ip();
    let name = rustls::pki_types::ServerName::IpAddress(ip.into());
    let connection = rustls::ClientConnection::new(Arc::clone(config), name)
        .map_err(|e| RpcError::new("java.io.IOException", format!("TLS: {e}"), false))?;
    Ok(Transport::Tls(Box::new(rustls::StreamOwned::new(
        connection, stream,
    ))))
}

/// Who this process's connections say they are, once set.
static PROCESS_USER: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Sets the user every later connection of this process names in its
/// header: a server sets its own (`[security] server_user`), so that with
/// authorization on the cluster's internal calls come from a superuser.
/// The first value set stays.
pub fn set_process_user(user: &str) {
    let _ = PROCESS_USER.set(user.to_string());
}

/// The user connections name: the one set, else the server user's
/// default (the process's `USER`).
fn process_user() -> String {
    PROCESS_USER
        .get()
        .cloned()
        .unwrap_or_else(|| basalt::SecurityOptions::default().server_user())
}

fn io_error(e: std::io::Error) -> RpcError {
    RpcError::new("java.io.IOException", e.to_string(), false)
}

impl RpcClient {
    /// Connects to `service` at `addr`; `cell_blocks` asks for answers'
    /// cells in KeyValue cell blocks, as HBase's Java client does.
    pub fn connect(
        addr: impl ToSocketAddrs,
        service: &str,
        cell_blocks: bool,
    ) -> Result<RpcClient, RpcError> {
        let stream = TcpStream::connect(addr).map_err(io_error)?;
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .map_err(io_error)?;
        RpcClient::handshake(stream, service, cell_blocks)
    }

    /// [`RpcClient::connect`] naming `user` in the connection header
    /// (HBase's simple authentication, whatever this process's own
    /// connections use), and `real_user` as the user acting for it, if any
    /// (impersonation).
    pub fn connect_as(
        addr: impl ToSocketAddrs,
        service: &str,
        cell_blocks: bool,
        user: &str,
        real_user: Option<&str>,
    ) -> Result<RpcClient, RpcError> {
        let stream = TcpStream::connect(addr).map_err(io_error)?;
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .map_err(io_error)?;
        RpcClient::simple_handshake(transport(stream)?, service, cell_blocks, user, real_user)
    }

    /// Connects to `service` at `addr` authenticated by Kerberos as the
    /// default principal of this process's credentials (ticket cache or
    /// client keytab), expecting the server to be `kerberos`'s principal;
    /// `effective_user`, if set, asks to act for that user (proxy rules
    /// decide).
    pub fn connect_kerberos(
        addr: impl ToSocketAddrs,
        service: &str,
        cell_blocks: bool,
        kerberos: &KerberosClient,
        effective_user: Option<&str>,
    ) -> Result<RpcClient, RpcError> {
        let stream = TcpStream::connect(addr).map_err(io_error)?;
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .map_err(io_error)?;
        let transport = transport(stream)?;
        RpcClient::kerberos_handshake(transport, service, cell_blocks, kerberos, effective_user)
    }

    /// Connects to `service` at `addr` within `timeout`; every later read
    /// and write on the connection also gives up after `timeout`, so a
    /// call to a server that stopped answering fails instead of hanging.
    pub fn connect_timeout(
        addr: &SocketAddr,
        service: &str,
        cell_blocks: bool,
        timeout: Duration,
    ) -> Result<RpcClient, RpcError> {
        // A zero timeout means "none" to the socket calls: keep a bound.
        let timeout = timeout.max(Duration::from_millis(1));
        let stream = TcpStream::connect_timeout(addr, timeout).map_err(io_error)?;
        stream.set_read_timeout(Some(timeout)).map_err(io_error)?;
        stream.set_write_timeout(Some(timeout)).map_err(io_error)?;
        // Region calls are small request/answer pairs: no Nagle delay.
        stream.set_nodelay(true).map_err(io_error)?;
        RpcClient::handshake(stream, service, cell_blocks)
    }

    /// Sends the preamble and the connection header as this process: with
    /// Kerberos as its own principal when it authenticates so, else
    /// naming the process user.
    fn handshake(
        stream: TcpStream,
        service: &str,
        cell_blocks: bool,
    ) -> Result<RpcClient, RpcError> {
        let transport = transport(stream)?;
        match PROCESS_KERBEROS.get() {
            Some(kerberos) => {
                RpcClient::kerberos_handshake(transport, service, cell_blocks, kerberos, None)
            }
            None => {
                RpcClient::simple_handshake(transport, service, cell_blocks, &process_user(), None)
            }
        }
    }

    /// Sends the SIMPLE preamble and a connection header naming `user`.
    fn simple_handshake(
        transport: Transport,
        service: &str,
        cell_blocks: bool,
        user: &str,
        real_user: Option<&str>,
    ) -> Result<RpcClient, RpcError> {
        let mut client = RpcClient {
            stream: transport,
            next_call: 1,
            cell_blocks,
        };
        let mut hello = b"HBas\x00\x50".to_vec();
        hello.extend_from_slice(&connection_header(
            service,
            cell_blocks,
            Some(user),
            real_user,
        ));
        client.stream.write_all(&hello).map_err(io_error)?;
        Ok(client)
    }

    /// The Kerberos handshake: the server's principal when only its
    /// pattern is known, the preamble, the SASL exchange, then the header,
    /// wrapped when the protection says so.
    fn kerberos_handshake(
        mut stream: Transport,
        service: &str,
        cell_blocks: bool,
        kerberos: &KerberosClient,
        effective_user: Option<&str>,
    ) -> Result<RpcClient, RpcError> {
        let refused = |why: String| RpcError::new("javax.security.sasl.SaslException", why, true);
        let target = if kerberos.server_principal.contains("/_HOST@") {
            stream
                .write_all(frame::SECURITY_PREAMBLE)
                .map_err(io_error)?;
            let (header, message, _) = read_response(&mut stream)?;
            if let Some(e) = header.exception {
                return Err(exception(e));
            }
            let answer = crate::proto::rpc::SecurityPreambleResponse::decode(message)
                .map_err(|e| RpcError::undecodable("SecurityPreamableResponse", e))?;
            let (pattern_service, pattern_realm) = service_and_realm(&kerberos.server_principal);
            let (service_name, realm) = service_and_realm(&answer.server_principal);
            if (service_name, realm) != (pattern_service, pattern_realm) {
                return Err(refused(format!(
                    "the server says it is {}, which is not expected (expected {})",
                    answer.server_principal, kerberos.server_principal
                )));
            }
            answer.server_principal
        } else {
            kerberos.server_principal.clone()
        };
        let initiator = basalt_kerberos::Initiator::new(kerberos.client_principal.as_deref())
            .map_err(|e| refused(e.to_string()))?;
        let context = initiator
            .context(&target)
            .map_err(|e| refused(e.to_string()))?;
        let mut sasl = basalt_kerberos::SaslClient::new(context, &kerberos.protection);
        let first = sasl.start().map_err(|e| refused(e.to_string()))?;
        let mut hello = b"HBas\x00\x51".to_vec();
        hello.put_u32(first.len() as u32);
        hello.extend_from_slice(&first);
        stream.write_all(&hello).map_err(io_error)?;
        let negotiated = loop {
            let challenge = read_sasl_challenge(&mut stream)?;
            match sasl.step(&challenge).map_err(|e| refused(e.to_string()))? {
                basalt_kerberos::SaslStep::Send(token) => {
                    let mut out = Vec::with_capacity(4 + token.len());
                    out.put_u32(token.len() as u32);
                    out.extend_from_slice(&token);
                    stream.write_all(&out).map_err(io_error)?;
                }
                basalt_kerberos::SaslStep::Wait => {}
                basalt_kerberos::SaslStep::Complete { last, negotiated } => {
                    if let Some(token) = last {
                        let mut out = Vec::with_capacity(4 + token.len());
                        out.put_u32(token.len() as u32);
                        out.extend_from_slice(&token);
                        stream.write_all(&out).map_err(io_error)?;
                    }
                    break negotiated;
                }
            }
        };
        let stream = if negotiated.layer.qop().wraps() {
            Transport::Wrapped(Box::new(Wrapped {
                inner: stream,
                layer: negotiated.layer,
                pending: Vec::new(),
                read_at: 0,
            }))
        } else {
            stream
        };
        let mut client = RpcClient {
            stream,
            next_call: 1,
            cell_blocks,
        };
        let header = connection_header(service, cell_blocks, effective_user, None);
        client.stream.write_all(&header).map_err(io_error)?;
        Ok(client)
    }

    /// Calls `method` with `param` (and `cells` in a cell block) and waits
    /// for its answer.
    pub fn call(&mut self, method: &str, param: &impl Message, cells: &[Cell]) -> CallResult {
        let id = self.next_call;
        self.next_call = self.next_call.wrapping_add(1);
        let mut block = Vec::new();
        cellblock::encode(cells, &mut block);
        let request = frame::encode_request(id, method, param, &block);
        if let Err(e) = self.stream.write_all(&request) {
            // A server that refused the connection (its header, its
            // authentication) answered why, then closed: that answer says
            // more than the broken pipe.
            return match self.read_frame() {
                Ok((header, _, _)) => Err(header.exception.map_or_else(|| io_error(e), exception)),
                Err(_) => Err(io_error(e)),
            };
        }
        loop {
            let (header, message, cells) = self.read_frame()?;
            if header.call_id != Some(id) {
                // An answer to another call (this client sends one at a
                // time; a fatal answer has no call).
                if let Some(e) = header.exception {
                    return Err(exception(e));
                }
                continue;
            }
            if let Some(e) = header.exception {
                return Err(exception(e));
            }
            let cells = if cells.is_empty() {
                Vec::new()
            } else {
                cellblock::decode(&cells, cells.len())?
            };
            return Ok(Answer { message, cells });
        }
    }

    /// Sends a call and does not wait for its answer (tests of clients that
    /// never read; [`RpcClient::read_frame`] reads it later).
    pub fn send_call(&mut self, method: &str, param: &impl Message) -> Result<(), RpcError> {
        let id = self.next_call;
        self.next_call = self.next_call.wrapping_add(1);
        let request = frame::encode_request(id, method, param, &[]);
        self.stream.write_all(&request).map_err(io_error)
    }

    /// Sends raw bytes (garbage-input tests).
    pub fn send_raw(&mut self, bytes: &[u8]) -> Result<(), RpcError> {
        self.stream.write_all(bytes).map_err(io_error)
    }

    /// Reads one answer frame: header, message, cell block.
    pub fn read_frame(
        &mut self,
    ) -> Result<(crate::proto::rpc::ResponseHeader, Bytes, Bytes), RpcError> {
        read_response(&mut self.stream)
    }

    /// True when the server has not closed the connection (nor sent
    /// anything unasked): an idle pooled connection is checked so before
    /// a call goes on it. Never waits.
    pub fn is_open(&self) -> bool {
        let tcp = self.stream.tcp();
        if tcp.set_nonblocking(true).is_err() {
            return false;
        }
        let mut byte = [0u8; 1];
        let open = matches!(
            tcp.peek(&mut byte),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock
        );
        open && tcp.set_nonblocking(false).is_ok()
    }

    /// True when answers carry cell blocks.
    pub fn uses_cell_blocks(&self) -> bool {
        self.cell_blocks
    }
}

/// The connection header, length first.
fn connection_header(
    service: &str,
    cell_blocks: bool,
    user: Option<&str>,
    real_user: Option<&str>,
) -> Vec<u8> {
    let header = ConnectionHeader {
        user_info: user.map(|user| UserInformation {
            effective_user: Some(user.to_string()),
            real_user: real_user.map(str::to_string),
        }),
        service_name: Some(service.to_string()),
        cell_block_codec_class: cell_blocks.then(|| cellblock::KEY_VALUE_CODEC.to_string()),
        cell_block_compressor_class: None,
        version_info: None,
        rpc_crypto_cipher_transformation: None,
    };
    let encoded = header.encode_to_vec();
    let mut out = Vec::with_capacity(4 + encoded.len());
    out.put_u32(encoded.len() as u32);
    out.extend_from_slice(&encoded);
    out
}

/// Reads one answer frame from `stream`.
fn read_response(
    stream: &mut Transport,
) -> Result<(crate::proto::rpc::ResponseHeader, Bytes, Bytes), RpcError> {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).map_err(io_error)?;
    let len = u32::from_be_bytes(len) as usize;
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body).map_err(io_error)?;
    frame::split_response(Bytes::from(body))
}

/// Reads one SASL challenge: SUCCESS and a token, or ERROR and the
/// server's exception. A server without security answers
/// `SWITCH_TO_SIMPLE_AUTH`, which this client refuses: it asked for
/// Kerberos and does not fall back.
fn read_sasl_challenge(stream: &mut Transport) -> Result<Vec<u8>, RpcError> {
    let mut word = [0u8; 4];
    stream.read_exact(&mut word).map_err(io_error)?;
    let status = u32::from_be_bytes(word);
    stream.read_exact(&mut word).map_err(io_error)?;
    let length = u32::from_be_bytes(word);
    let read_string = |stream: &mut Transport, length: u32| -> Result<String, RpcError> {
        let mut bytes = vec![0u8; (length as usize).min(frame::MAX_SASL_TOKEN_BYTES)];
        stream.read_exact(&mut bytes).map_err(io_error)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    };
    match status {
        0 if length == 0xFFFF_FFA8 => Err(RpcError::new(
            "org.apache.hadoop.hbase.security.FallbackDisallowedException",
            "the server has no security and asks to fall back to SIMPLE authentication; this client does not".to_string(),
            true,
        )),
        0 if length as usize > frame::MAX_SASL_TOKEN_BYTES => Err(RpcError::new(
            "javax.security.sasl.SaslException",
            format!("a SASL challenge of {length} bytes is over the limit"),
            true,
        )),
        0 => {
            let mut token = vec![0u8; length as usize];
            stream.read_exact(&mut token).map_err(io_error)?;
            Ok(token)
        }
        _ => {
            let class = read_string(stream, length)?;
            stream.read_exact(&mut word).map_err(io_error)?;
            let message = read_string(stream, u32::from_be_bytes(word))?;
            Err(RpcError::new(&class, message, true))
        }
    }
}

/// `hbase` and `REALM` of `hbase/host@REALM`.
fn service_and_realm(principal: &str) -> (&str, &str) {
    let (names, realm) = principal.split_once('@').unwrap_or((principal, ""));
    let service = names.split_once('/').map_or(names, |(service, _)| service);
    (service, realm)
}

fn exception(e: crate::proto::rpc::ExceptionResponse) -> RpcError {
    RpcError::new(
        e.exception_class_name
            .as_deref()
            .unwrap_or("java.io.IOException"),
        e.stack_trace.unwrap_or_default(),
        e.do_not_retry.unwrap_or(false),
    )
}
