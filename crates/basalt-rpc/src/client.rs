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

/// A connection's bytes: plain TCP, or TLS over it.
#[derive(Debug)]
enum Transport {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Transport {
    fn tcp(&self) -> &TcpStream {
        match self {
            Transport::Plain(s) => s,
            Transport::Tls(s) => s.get_ref(),
        }
    }
}

impl Read for Transport {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Transport::Plain(s) => s.read(buf),
            Transport::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Transport {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Transport::Plain(s) => s.write(buf),
            Transport::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Transport::Plain(s) => s.flush(),
            Transport::Tls(s) => s.flush(),
        }
    }
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
        RpcClient::connect_as(addr, service, cell_blocks, &process_user(), None)
    }

    /// [`RpcClient::connect`] naming `user` in the connection header
    /// (HBase's simple authentication), and `real_user` as the user
    /// acting for it, if any (impersonation).
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
        RpcClient::handshake(stream, service, cell_blocks, user, real_user)
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
        RpcClient::handshake(stream, service, cell_blocks, &process_user(), None)
    }

    /// Sends the preamble and the connection header.
    fn handshake(
        stream: TcpStream,
        service: &str,
        cell_blocks: bool,
        user: &str,
        real_user: Option<&str>,
    ) -> Result<RpcClient, RpcError> {
        let mut client = RpcClient {
            stream: transport(stream)?,
            next_call: 1,
            cell_blocks,
        };
        let header = ConnectionHeader {
            user_info: Some(UserInformation {
                effective_user: Some(user.to_string()),
                real_user: real_user.map(str::to_string),
            }),
            service_name: Some(service.to_string()),
            cell_block_codec_class: cell_blocks.then(|| cellblock::KEY_VALUE_CODEC.to_string()),
            cell_block_compressor_class: None,
            version_info: None,
            rpc_crypto_cipher_transformation: None,
        };
        let mut hello = b"HBas\x00\x50".to_vec();
        let encoded = header.encode_to_vec();
        hello.put_u32(encoded.len() as u32);
        hello.extend_from_slice(&encoded);
        client.stream.write_all(&hello).map_err(io_error)?;
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
        self.stream.write_all(&request).map_err(io_error)?;
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
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len).map_err(io_error)?;
        let len = u32::from_be_bytes(len) as usize;
        let mut body = vec![0u8; len];
        self.stream.read_exact(&mut body).map_err(io_error)?;
        frame::split_response(Bytes::from(body))
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

fn exception(e: crate::proto::rpc::ExceptionResponse) -> RpcError {
    RpcError::new(
        e.exception_class_name
            .as_deref()
            .unwrap_or("java.io.IOException"),
        e.stack_trace.unwrap_or_default(),
        e.do_not_retry.unwrap_or(false),
    )
}
