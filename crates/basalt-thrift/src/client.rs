//! A blocking Thrift1 client for the `Hbase` service, in every transport
//! and protocol the server speaks, in plaintext or TLS. Used by the tests,
//! and by `basalt shell` and `basalt bench`.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};

use basalt_kerberos::{Qop, SecurityLayer};

use crate::protocol::{
    decode_message, encode_message, DecodeError, MessageHeader, MessageType, Protocol, Value,
};
use crate::types::{
    args, AlreadyExists, BatchMutation, ColumnDescriptor, IOError, IllegalArgument, Mutation,
    TAppend, TApplicationException, TCell, TIncrement, TRegionInfo, TRowResult, TScan, Thrift,
};

/// How long the Kerberos exchange may wait for each server message.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(60);

/// Largest reply the client accepts.
const MAX_REPLY_BYTES: usize = 256 * 1024 * 1024;

/// What a call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The service's `IOError`.
    #[error("IOError: {0}")]
    Io(String),
    /// The service's `IllegalArgument`.
    #[error("IllegalArgument: {0}")]
    IllegalArgument(String),
    /// The service's `AlreadyExists`.
    #[error("AlreadyExists: {0}")]
    AlreadyExists(String),
    /// A `TApplicationException` (unknown method, malformed call, ...).
    #[error("TApplicationException (type {kind}): {message}")]
    Application {
        /// The type code (see [`app_error`](crate::types::app_error)).
        kind: i32,
        /// The server's message.
        message: String,
    },
    /// The connection failed.
    #[error("transport error: {0}")]
    Transport(#[from] io::Error),
    /// The reply did not make sense.
    #[error("protocol error: {0}")]
    Protocol(String),
}

/// A connection's bytes: plain TCP, TLS over it, or Thrift's SASL
/// transport after a Kerberos exchange.
#[derive(Debug)]
enum Transport {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
    Sasl(Box<SaslTransport>),
}

impl Transport {
    fn tcp_ref(&self) -> &TcpStream {
        match self {
            Transport::Plain(s) => s,
            Transport::Tls(s) => s.get_ref(),
            Transport::Sasl(s) => &s.tcp,
        }
    }

    fn tcp(&mut self) -> &mut TcpStream {
        match self {
            Transport::Plain(s) => s,
            Transport::Tls(s) => s.get_mut(),
            Transport::Sasl(s) => &mut s.tcp,
        }
    }
}

impl Read for Transport {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(s) => s.read(buf),
            Transport::Tls(s) => s.read(buf),
            Transport::Sasl(s) => s.read(buf),
        }
    }
}

impl Write for Transport {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(s) => s.write(buf),
            Transport::Tls(s) => s.write(buf),
            Transport::Sasl(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Transport::Plain(s) => s.flush(),
            Transport::Tls(s) => s.flush(),
            Transport::Sasl(s) => s.tcp.flush(),
        }
    }
}

/// How a client authenticates to a Kerberos Thrift server (SASL GSSAPI,
/// `crate::sasl`).
#[derive(Debug, Clone)]
pub struct KerberosClient {
    /// The server's principal (`hbase/host@REALM`).
    pub server_principal: String,
    /// Whose tickets to use (`alice@REALM`); `None`: the ticket cache's.
    pub client_principal: Option<String>,
    /// The protections the client takes, the first the server offers
    /// winning.
    pub protection: Vec<Qop>,
}

/// Thrift's SASL transport after the exchange, client side: every write
/// is one `u32 length, data` message, every read unwraps one.
struct SaslTransport {
    tcp: TcpStream,
    layer: SecurityLayer,
    plain: Vec<u8>,
    at: usize,
}

impl std::fmt::Debug for SaslTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslTransport")
            .field("tcp", &self.tcp)
            .field("protection", &self.layer.qop())
            .finish_non_exhaustive()
    }
}

impl Read for SaslTransport {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at >= self.plain.len() {
            let mut len = [0u8; 4];
            match self.tcp.read_exact(&mut len) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                Err(e) => return Err(e),
            }
            let len = u32::from_be_bytes(len) as usize;
            if len > MAX_REPLY_BYTES {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("a SASL message of {len} bytes"),
                ));
            }
            let mut token = vec![0u8; len];
            self.tcp.read_exact(&mut token)?;
            self.plain = self
                .layer
                .unwrap(&token)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
            self.at = 0;
        }
        let n = buf.len().min(self.plain.len() - self.at);
        buf[..n].copy_from_slice(&self.plain[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

impl Write for SaslTransport {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let token = self
            .layer
            .wrap(buf)
            .map_err(|e| io::Error::other(e.to_string()))?;
        let len = u32::try_from(token.len())
            .map_err(|_| io::Error::other("a wrapped message over 4 GiB"))?;
        let mut out = Vec::with_capacity(4 + token.len());
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&token);
        self.tcp.write_all(&out)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.tcp.flush()
    }
}

fn refused(why: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, why.to_string())
}

/// Reads one SASL negotiation message.
fn read_negotiation(tcp: &mut TcpStream) -> io::Result<(u8, Vec<u8>)> {
    let mut head = [0u8; 5];
    tcp.read_exact(&mut head)?;
    let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
    if len > crate::sasl::MAX_NEGOTIATION_BYTES {
        return Err(refused(format!(
            "a SASL negotiation message of {len} bytes"
        )));
    }
    let mut payload = vec![0u8; len];
    tcp.read_exact(&mut payload)?;
    Ok((head[0], payload))
}

/// Runs the client side of the SASL GSSAPI exchange on `tcp`.
fn sasl_handshake(tcp: &mut TcpStream, kerberos: &KerberosClient) -> io::Result<SecurityLayer> {
    use crate::sasl::{message, status_name, BAD, COMPLETE, ERROR, GSSAPI, OK, START};
    let initiator =
        basalt_kerberos::Initiator::new(kerberos.client_principal.as_deref()).map_err(refused)?;
    let context = initiator
        .context(&kerberos.server_principal)
        .map_err(refused)?;
    let mut client = basalt_kerberos::SaslClient::new(context, &kerberos.protection);
    let first = client.start().map_err(refused)?;
    let mut out = message(START, GSSAPI);
    out.extend_from_slice(&message(OK, &first));
    tcp.write_all(&out)?;
    loop {
        let (status, payload) = read_negotiation(tcp)?;
        match status {
            OK => {}
            BAD | ERROR => {
                return Err(refused(format!(
                    "the server refused the SASL exchange ({}): {}",
                    status_name(status),
                    String::from_utf8_lossy(&payload)
                )))
            }
            other => {
                return Err(refused(format!(
                    "SASL: expected OK, got {}",
                    status_name(other)
                )))
            }
        }
        match client.step(&payload).map_err(refused)? {
            basalt_kerberos::SaslStep::Send(token) => tcp.write_all(&message(OK, &token))?,
            basalt_kerberos::SaslStep::Wait => tcp.write_all(&message(OK, &[]))?,
            basalt_kerberos::SaslStep::Complete { last, negotiated } => {
                // Java's client says COMPLETE with its choice (Python's
                // says OK); the server answers COMPLETE either way.
                tcp.write_all(&message(COMPLETE, &last.unwrap_or_default()))?;
                let (status, payload) = read_negotiation(tcp)?;
                if status != COMPLETE {
                    return Err(refused(format!(
                        "SASL: expected COMPLETE, got {}: {}",
                        status_name(status),
                        String::from_utf8_lossy(&payload)
                    )));
                }
                return Ok(negotiated.layer);
            }
        }
    }
}

/// A connection to a Thrift1 server.
#[derive(Debug)]
pub struct Client {
    stream: Transport,
    framed: bool,
    protocol: Protocol,
    seqid: i32,
    buf: BytesMut,
}

/// Result alias for client calls.
pub type ClientResult<T> = Result<T, ClientError>;

fn bytes(b: &[u8]) -> Bytes {
    Bytes::copy_from_slice(b)
}

fn list(items: &[&[u8]]) -> Vec<Bytes> {
    items.iter().map(|b| bytes(b)).collect()
}

impl Client {
    /// Connects with the given transport (`framed` or buffered) and protocol.
    pub fn connect(addr: impl ToSocketAddrs, framed: bool, protocol: Protocol) -> io::Result<Self> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        Ok(Client::over(Transport::Plain(stream), framed, protocol))
    }

    /// Connects over TLS with `config` (`basalt::tls::client_config`),
    /// checking that the server's certificate names `server_name` (a host
    /// name, or an IP address for an IP SAN). The handshake runs with the
    /// first call, which fails if it does.
    pub fn connect_tls(
        addr: impl ToSocketAddrs,
        framed: bool,
        protocol: Protocol,
        config: Arc<rustls::ClientConfig>,
        server_name: &str,
    ) -> io::Result<Self> {
        let name = rustls::pki_types::ServerName::try_from(server_name.to_string())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("TLS: {e}")))?;
        let connection = rustls::ClientConnection::new(config, name)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("TLS: {e}")))?;
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        let tls = rustls::StreamOwned::new(connection, stream);
        Ok(Client::over(
            Transport::Tls(Box::new(tls)),
            framed,
            protocol,
        ))
    }

    /// Connects to a server with Kerberos on: the SASL GSSAPI exchange
    /// first (refused: a `PermissionDenied` error saying why), then calls
    /// travel inside Thrift's SASL transport, wrapped as negotiated.
    pub fn connect_kerberos(
        addr: impl ToSocketAddrs,
        framed: bool,
        protocol: Protocol,
        kerberos: &KerberosClient,
    ) -> io::Result<Self> {
        let mut tcp = TcpStream::connect(addr)?;
        tcp.set_nodelay(true)?;
        // A server that never answers must not hold the exchange forever;
        // the caller sets its own timeouts afterwards.
        tcp.set_read_timeout(Some(HANDSHAKE_TIMEOUT))?;
        let layer = sasl_handshake(&mut tcp, kerberos)?;
        tcp.set_read_timeout(None)?;
        let transport = SaslTransport {
            tcp,
            layer,
            plain: Vec::new(),
            at: 0,
        };
        Ok(Client::over(
            Transport::Sasl(Box::new(transport)),
            framed,
            protocol,
        ))
    }

    fn over(stream: Transport, framed: bool, protocol: Protocol) -> Client {
        Client {
            stream,
            framed,
            protocol,
            seqid: 0,
            buf: BytesMut::new(),
        }
    }

    /// Sets read and write timeouts (a hang guard for tests).
    pub fn set_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        let tcp = self.stream.tcp_ref();
        tcp.set_read_timeout(timeout)?;
        tcp.set_write_timeout(timeout)
    }

    /// The underlying socket (tests send raw bytes through it; under TLS,
    /// the socket below it).
    pub fn stream(&mut self) -> &mut TcpStream {
        self.stream.tcp()
    }

    /// Sends a call and does not wait for its reply (tests of clients that
    /// never read their answers; [`Client::read_reply`] reads it later).
    pub fn send_call(&mut self, method: &str, args: Value) -> ClientResult<()> {
        self.seqid = self.seqid.wrapping_add(1);
        let out = self.encode_call(method, &args)?;
        self.stream.write_all(&out)?;
        Ok(())
    }

    fn encode_call(&self, method: &str, args: &Value) -> ClientResult<BytesMut> {
        let header = MessageHeader {
            name: method.to_string(),
            kind: MessageType::Call,
            seqid: self.seqid,
        };
        let mut out = BytesMut::new();
        if self.framed {
            out.put_u32(0);
        }
        encode_message(self.protocol, &header, args, &mut out);
        if self.framed {
            let len = u32::try_from(out.len() - 4)
                .map_err(|_| ClientError::Protocol("call too large".into()))?;
            out[..4].copy_from_slice(&len.to_be_bytes());
        }
        Ok(out)
    }

    /// Sends a call with an argument struct and returns the reply's result
    /// struct, or the `TApplicationException` it carried.
    pub fn call_raw(&mut self, method: &str, args: Value) -> ClientResult<Value> {
        self.seqid = self.seqid.wrapping_add(1);
        let header = MessageHeader {
            name: method.to_string(),
            kind: MessageType::Call,
            seqid: self.seqid,
        };
        let mut out = BytesMut::new();
        if self.framed {
            out.put_u32(0);
        }
        encode_message(self.protocol, &header, &args, &mut out);
        if self.framed {
            let len = u32::try_from(out.len() - 4)
                .map_err(|_| ClientError::Protocol("call too large".into()))?;
            out[..4].copy_from_slice(&len.to_be_bytes());
        }
        self.stream.write_all(&out)?;
        let (reply, body) = self.read_reply()?;
        if reply.seqid != self.seqid {
            return Err(ClientError::Protocol(format!(
                "reply sequence id {} does not match call {}",
                reply.seqid, self.seqid
            )));
        }
        match reply.kind {
            MessageType::Reply => Ok(body),
            MessageType::Exception => {
                let e = TApplicationException::from_value(body).map_err(ClientError::Protocol)?;
                Err(ClientError::Application {
                    kind: e.kind.unwrap_or(0),
                    message: e.message.unwrap_or_default(),
                })
            }
            other => Err(ClientError::Protocol(format!(
                "unexpected message type {other:?}"
            ))),
        }
    }

    fn fill(&mut self) -> ClientResult<()> {
        let mut chunk = [0u8; 64 * 1024];
        let n = self.stream.read(&mut chunk)?;
        if n == 0 {
            return Err(ClientError::Transport(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "server closed the connection",
            )));
        }
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(())
    }

    /// Reads the next message the server sends (tests use it after writing
    /// raw bytes through [`Client::stream`]).
    pub fn read_reply(&mut self) -> ClientResult<(MessageHeader, Value)> {
        if self.framed {
            while self.buf.len() < 4 {
                self.fill()?;
            }
            let len =
                u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]) as usize;
            if len > MAX_REPLY_BYTES {
                return Err(ClientError::Protocol(format!("reply frame of {len} bytes")));
            }
            while self.buf.len() < 4 + len {
                self.fill()?;
            }
            let decoded = decode_message(self.protocol, &self.buf[4..4 + len]);
            self.buf.advance(4 + len);
            return decoded
                .map(|(h, v, _)| (h, v))
                .map_err(|(_, e)| ClientError::Protocol(e.to_string()));
        }
        loop {
            match decode_message(self.protocol, &self.buf[..]) {
                Ok((header, body, used)) => {
                    self.buf.advance(used);
                    return Ok((header, body));
                }
                Err((_, DecodeError::Incomplete { needed })) if needed <= MAX_REPLY_BYTES => {
                    while self.buf.len() < needed {
                        self.fill()?;
                    }
                }
                Err((_, e)) => return Err(ClientError::Protocol(e.to_string())),
            }
        }
    }

    /// Calls a method and decodes its result (field 0) or its exception.
    pub fn call<T: Thrift>(&mut self, method: &str, args: Value) -> ClientResult<T> {
        match self.call_result(method, args)? {
            Some(v) => T::from_value(v).map_err(ClientError::Protocol),
            None => Err(ClientError::Application {
                kind: crate::types::app_error::MISSING_RESULT,
                message: format!("{method} returned no result"),
            }),
        }
    }

    /// Calls a method that returns nothing.
    pub fn call_void(&mut self, method: &str, args: Value) -> ClientResult<()> {
        self.call_result(method, args).map(|_| ())
    }

    fn call_result(&mut self, method: &str, args: Value) -> ClientResult<Option<Value>> {
        let reply = self.call_raw(method, args)?;
        result_or_exception(reply, |id, value| match id {
            1 => Some(
                IOError::from_value(value).map(|e| ClientError::Io(e.message.unwrap_or_default())),
            ),
            2 => Some(
                IllegalArgument::from_value(value)
                    .map(|e| ClientError::IllegalArgument(e.message.unwrap_or_default())),
            ),
            3 => Some(
                AlreadyExists::from_value(value)
                    .map(|e| ClientError::AlreadyExists(e.message.unwrap_or_default())),
            ),
            _ => None,
        })
    }

    // ---- typed methods, one per service method ----

    fn table_arg(table: &[u8]) -> Value {
        args::TableName {
            table_name: Some(bytes(table)),
        }
        .to_value()
    }

    /// `enableTable`.
    pub fn enable_table(&mut self, table: &[u8]) -> ClientResult<()> {
        self.call_void("enableTable", Self::table_arg(table))
    }

    /// `disableTable`.
    pub fn disable_table(&mut self, table: &[u8]) -> ClientResult<()> {
        self.call_void("disableTable", Self::table_arg(table))
    }

    /// `isTableEnabled`.
    pub fn is_table_enabled(&mut self, table: &[u8]) -> ClientResult<bool> {
        self.call("isTableEnabled", Self::table_arg(table))
    }

    /// `compact` (a table or region name).
    pub fn compact(&mut self, table_or_region: &[u8]) -> ClientResult<()> {
        self.call_void("compact", Self::table_arg(table_or_region))
    }

    /// `majorCompact` (a table or region name).
    pub fn major_compact(&mut self, table_or_region: &[u8]) -> ClientResult<()> {
        self.call_void("majorCompact", Self::table_arg(table_or_region))
    }

    /// `getTableNames`.
    pub fn get_table_names(&mut self) -> ClientResult<Vec<Bytes>> {
        self.call("getTableNames", args::Empty::default().to_value())
    }

    /// `getTableNamesWithIsTableEnabled`.
    pub fn get_table_names_with_is_table_enabled(&mut self) -> ClientResult<BTreeMap<Bytes, bool>> {
        self.call(
            "getTableNamesWithIsTableEnabled",
            args::Empty::default().to_value(),
        )
    }

    /// `getColumnDescriptors`: family names end in `:`.
    pub fn get_column_descriptors(
        &mut self,
        table: &[u8],
    ) -> ClientResult<BTreeMap<Bytes, ColumnDescriptor>> {
        self.call("getColumnDescriptors", Self::table_arg(table))
    }

    /// `getTableRegions`.
    pub fn get_table_regions(&mut self, table: &[u8]) -> ClientResult<Vec<TRegionInfo>> {
        self.call("getTableRegions", Self::table_arg(table))
    }

    /// `createTable`.
    pub fn create_table(
        &mut self,
        table: &[u8],
        families: Vec<ColumnDescriptor>,
    ) -> ClientResult<()> {
        let a = args::CreateTable {
            table_name: Some(bytes(table)),
            column_families: Some(families),
        };
        self.call_void("createTable", a.to_value())
    }

    /// `deleteTable`.
    pub fn delete_table(&mut self, table: &[u8]) -> ClientResult<()> {
        self.call_void("deleteTable", Self::table_arg(table))
    }

    /// `get`: the latest version of a column (or of each column of a family).
    pub fn get(&mut self, table: &[u8], row: &[u8], column: &[u8]) -> ClientResult<Vec<TCell>> {
        let a = args::Get {
            table_name: Some(bytes(table)),
            row: Some(bytes(row)),
            column: Some(bytes(column)),
            attributes: Some(BTreeMap::new()),
        };
        self.call("get", a.to_value())
    }

    /// `getVer`.
    pub fn get_ver(
        &mut self,
        table: &[u8],
        row: &[u8],
        column: &[u8],
        versions: i32,
    ) -> ClientResult<Vec<TCell>> {
        let a = args::GetVer {
            table_name: Some(bytes(table)),
            row: Some(bytes(row)),
            column: Some(bytes(column)),
            num_versions: Some(versions),
            attributes: Some(BTreeMap::new()),
        };
        self.call("getVer", a.to_value())
    }

    /// `getVerTs`: versions with timestamps in `[0, ts)`.
    pub fn get_ver_ts(
        &mut self,
        table: &[u8],
        row: &[u8],
        column: &[u8],
        ts: i64,
        versions: i32,
    ) -> ClientResult<Vec<TCell>> {
        let a = args::GetVerTs {
            table_name: Some(bytes(table)),
            row: Some(bytes(row)),
            column: Some(bytes(column)),
            timestamp: Some(ts),
            num_versions: Some(versions),
            attributes: Some(BTreeMap::new()),
        };
        self.call("getVerTs", a.to_value())
    }

    /// `getRow`.
    pub fn get_row(&mut self, table: &[u8], row: &[u8]) -> ClientResult<Vec<TRowResult>> {
        let a = args::Row {
            table_name: Some(bytes(table)),
            row: Some(bytes(row)),
            attributes: Some(BTreeMap::new()),
        };
        self.call("getRow", a.to_value())
    }

    /// `getRowWithColumns`.
    pub fn get_row_with_columns(
        &mut self,
        table: &[u8],
        row: &[u8],
        columns: &[&[u8]],
    ) -> ClientResult<Vec<TRowResult>> {
        let a = args::RowWithColumns {
            table_name: Some(bytes(table)),
            row: Some(bytes(row)),
            columns: Some(list(columns)),
            attributes: Some(BTreeMap::new()),
        };
        self.call("getRowWithColumns", a.to_value())
    }

    /// `getRowTs`.
    pub fn get_row_ts(
        &mut self,
        table: &[u8],
        row: &[u8],
        ts: i64,
    ) -> ClientResult<Vec<TRowResult>> {
        let a = args::RowTs {
            table_name: Some(bytes(table)),
            row: Some(bytes(row)),
            timestamp: Some(ts),
            attributes: Some(BTreeMap::new()),
        };
        self.call("getRowTs", a.to_value())
    }

    /// `getRowWithColumnsTs`.
    pub fn get_row_with_columns_ts(
        &mut self,
        table: &[u8],
        row: &[u8],
        columns: &[&[u8]],
        ts: i64,
    ) -> ClientResult<Vec<TRowResult>> {
        let a = args::RowWithColumnsTs {
            table_name: Some(bytes(table)),
            row: Some(bytes(row)),
            columns: Some(list(columns)),
            timestamp: Some(ts),
            attributes: Some(BTreeMap::new()),
        };
        self.call("getRowWithColumnsTs", a.to_value())
    }

    /// `getRows`.
    pub fn get_rows(&mut self, table: &[u8], rows: &[&[u8]]) -> ClientResult<Vec<TRowResult>> {
        let a = args::Rows {
            table_name: Some(bytes(table)),
            rows: Some(list(rows)),
            attributes: Some(BTreeMap::new()),
        };
        self.call("getRows", a.to_value())
    }

    /// `getRowsWithColumns`.
    pub fn get_rows_with_columns(
        &mut self,
        table: &[u8],
        rows: &[&[u8]],
        columns: &[&[u8]],
    ) -> ClientResult<Vec<TRowResult>> {
        let a = args::RowsWithColumns {
            table_name: Some(bytes(table)),
            rows: Some(list(rows)),
            columns: Some(list(columns)),
            attributes: Some(BTreeMap::new()),
        };
        self.call("getRowsWithColumns", a.to_value())
    }

    /// `getRowsTs`.
    pub fn get_rows_ts(
        &mut self,
        table: &[u8],
        rows: &[&[u8]],
        ts: i64,
    ) -> ClientResult<Vec<TRowResult>> {
        let a = args::RowsTs {
            table_name: Some(bytes(table)),
            rows: Some(list(rows)),
            timestamp: Some(ts),
            attributes: Some(BTreeMap::new()),
        };
        self.call("getRowsTs", a.to_value())
    }

    /// `getRowsWithColumnsTs`.
    pub fn get_rows_with_columns_ts(
        &mut self,
        table: &[u8],
        rows: &[&[u8]],
        columns: &[&[u8]],
        ts: i64,
    ) -> ClientResult<Vec<TRowResult>> {
        let a = args::RowsWithColumnsTs {
            table_name: Some(bytes(table)),
            rows: Some(list(rows)),
            columns: Some(list(columns)),
            timestamp: Some(ts),
            attributes: Some(BTreeMap::new()),
        };
        self.call("getRowsWithColumnsTs", a.to_value())
    }

    /// `mutateRow`.
    pub fn mutate_row(
        &mut self,
        table: &[u8],
        row: &[u8],
        mutations: Vec<Mutation>,
    ) -> ClientResult<()> {
        let a = args::MutateRow {
            table_name: Some(bytes(table)),
            row: Some(bytes(row)),
            mutations: Some(mutations),
            attributes: Some(BTreeMap::new()),
        };
        self.call_void("mutateRow", a.to_value())
    }

    /// `mutateRowTs`.
    pub fn mutate_row_ts(
        &mut self,
        table: &[u8],
        row: &[u8],
        mutations: Vec<Mutation>,
        ts: i64,
    ) -> ClientResult<()> {
        let a = args::MutateRowTs {
            table_name: Some(bytes(table)),
            row: Some(bytes(row)),
            mutations: Some(mutations),
            timestamp: Some(ts),
            attributes: Some(BTreeMap::new()),
        };
        self.call_void("mutateRowTs", a.to_value())
    }

    /// `mutateRows`.
    pub fn mutate_rows(&mut self, table: &[u8], batches: Vec<BatchMutation>) -> ClientResult<()> {
        let a = args::MutateRows {
            table_name: Some(bytes(table)),
            row_batches: Some(batches),
            attributes: Some(BTreeMap::new()),
        };
        self.call_void("mutateRows", a.to_value())
    }

    /// `mutateRowsTs`.
    pub fn mutate_rows_ts(
        &mut self,
        table: &[u8],
        batches: Vec<BatchMutation>,
        ts: i64,
    ) -> ClientResult<()> {
        let a = args::MutateRowsTs {
            table_name: Some(bytes(table)),
            row_batches: Some(batches),
            timestamp: Some(ts),
            attributes: Some(BTreeMap::new()),
        };
        self.call_void("mutateRowsTs", a.to_value())
    }

    /// `atomicIncrement`: returns the new value.
    pub fn atomic_increment(
        &mut self,
        table: &[u8],
        row: &[u8],
        column: &[u8],
        delta: i64,
    ) -> ClientResult<i64> {
        let a = args::AtomicIncrement {
            table_name: Some(bytes(table)),
            row: Some(bytes(row)),
            column: Some(bytes(column)),
            value: Some(delta),
        };
        self.call("atomicIncrement", a.to_value())
    }

    /// `deleteAll`: every version of a column (or a whole family).
    pub fn delete_all(&mut self, table: &[u8], row: &[u8], column: &[u8]) -> ClientResult<()> {
        let a = args::DeleteAll {
            table_name: Some(bytes(table)),
            row: Some(bytes(row)),
            column: Some(bytes(column)),
            attributes: Some(BTreeMap::new()),
        };
        self.call_void("deleteAll", a.to_value())
    }

    /// `deleteAllTs`: versions with timestamps up to and including `ts`.
    pub fn delete_all_ts(
        &mut self,
        table: &[u8],
        row: &[u8],
        column: &[u8],
        ts: i64,
    ) -> ClientResult<()> {
        let a = args::DeleteAllTs {
            table_name: Some(bytes(table)),
            row: Some(bytes(row)),
            column: Some(bytes(column)),
            timestamp: Some(ts),
            attributes: Some(BTreeMap::new()),
        };
        self.call_void("deleteAllTs", a.to_value())
    }

    /// `deleteAllRow`.
    pub fn delete_all_row(&mut self, table: &[u8], row: &[u8]) -> ClientResult<()> {
        let a = args::Row {
            table_name: Some(bytes(table)),
            row: Some(bytes(row)),
            attributes: Some(BTreeMap::new()),
        };
        self.call_void("deleteAllRow", a.to_value())
    }

    /// `deleteAllRowTs`.
    pub fn delete_all_row_ts(&mut self, table: &[u8], row: &[u8], ts: i64) -> ClientResult<()> {
        let a = args::RowTs {
            table_name: Some(bytes(table)),
            row: Some(bytes(row)),
            timestamp: Some(ts),
            attributes: Some(BTreeMap::new()),
        };
        self.call_void("deleteAllRowTs", a.to_value())
    }

    /// `increment`.
    pub fn increment(&mut self, increment: TIncrement) -> ClientResult<()> {
        let a = args::Increment {
            increment: Some(increment),
        };
        self.call_void("increment", a.to_value())
    }

    /// `incrementRows`.
    pub fn increment_rows(&mut self, increments: Vec<TIncrement>) -> ClientResult<()> {
        let a = args::IncrementRows {
            increments: Some(increments),
        };
        self.call_void("incrementRows", a.to_value())
    }

    /// `scannerOpenWithScan`.
    pub fn scanner_open_with_scan(&mut self, table: &[u8], scan: TScan) -> ClientResult<i32> {
        let a = args::ScannerOpenWithScan {
            table_name: Some(bytes(table)),
            scan: Some(scan),
            attributes: Some(BTreeMap::new()),
        };
        self.call("scannerOpenWithScan", a.to_value())
    }

    /// `scannerOpen`.
    pub fn scanner_open(
        &mut self,
        table: &[u8],
        start: &[u8],
        columns: &[&[u8]],
    ) -> ClientResult<i32> {
        let a = args::ScannerOpen {
            table_name: Some(bytes(table)),
            start_row: Some(bytes(start)),
            columns: Some(list(columns)),
            attributes: Some(BTreeMap::new()),
        };
        self.call("scannerOpen", a.to_value())
    }

    /// `scannerOpenWithStop`.
    pub fn scanner_open_with_stop(
        &mut self,
        table: &[u8],
        start: &[u8],
        stop: &[u8],
        columns: &[&[u8]],
    ) -> ClientResult<i32> {
        let a = args::ScannerOpenWithStop {
            table_name: Some(bytes(table)),
            start_row: Some(bytes(start)),
            stop_row: Some(bytes(stop)),
            columns: Some(list(columns)),
            attributes: Some(BTreeMap::new()),
        };
        self.call("scannerOpenWithStop", a.to_value())
    }

    /// `scannerOpenWithPrefix`.
    pub fn scanner_open_with_prefix(
        &mut self,
        table: &[u8],
        prefix: &[u8],
        columns: &[&[u8]],
    ) -> ClientResult<i32> {
        let a = args::ScannerOpenWithPrefix {
            table_name: Some(bytes(table)),
            start_and_prefix: Some(bytes(prefix)),
            columns: Some(list(columns)),
            attributes: Some(BTreeMap::new()),
        };
        self.call("scannerOpenWithPrefix", a.to_value())
    }

    /// `scannerOpenTs`.
    pub fn scanner_open_ts(
        &mut self,
        table: &[u8],
        start: &[u8],
        columns: &[&[u8]],
        ts: i64,
    ) -> ClientResult<i32> {
        let a = args::ScannerOpenTs {
            table_name: Some(bytes(table)),
            start_row: Some(bytes(start)),
            columns: Some(list(columns)),
            timestamp: Some(ts),
            attributes: Some(BTreeMap::new()),
        };
        self.call("scannerOpenTs", a.to_value())
    }

    /// `scannerOpenWithStopTs`.
    pub fn scanner_open_with_stop_ts(
        &mut self,
        table: &[u8],
        start: &[u8],
        stop: &[u8],
        columns: &[&[u8]],
        ts: i64,
    ) -> ClientResult<i32> {
        let a = args::ScannerOpenWithStopTs {
            table_name: Some(bytes(table)),
            start_row: Some(bytes(start)),
            stop_row: Some(bytes(stop)),
            columns: Some(list(columns)),
            timestamp: Some(ts),
            attributes: Some(BTreeMap::new()),
        };
        self.call("scannerOpenWithStopTs", a.to_value())
    }

    /// `scannerGet`: the next row, or an empty list at the end.
    pub fn scanner_get(&mut self, id: i32) -> ClientResult<Vec<TRowResult>> {
        let a = args::ScannerId { id: Some(id) };
        self.call("scannerGet", a.to_value())
    }

    /// `scannerGetList`: up to `rows` rows, an empty list at the end.
    pub fn scanner_get_list(&mut self, id: i32, rows: i32) -> ClientResult<Vec<TRowResult>> {
        let a = args::ScannerGetList {
            id: Some(id),
            nb_rows: Some(rows),
        };
        self.call("scannerGetList", a.to_value())
    }

    /// `scannerClose`.
    pub fn scanner_close(&mut self, id: i32) -> ClientResult<()> {
        let a = args::ScannerId { id: Some(id) };
        self.call_void("scannerClose", a.to_value())
    }

    /// Reads a scanner to its end (in pages of `page` rows) and closes it.
    pub fn scan_all(&mut self, id: i32, page: i32) -> ClientResult<Vec<TRowResult>> {
        let mut out = Vec::new();
        loop {
            let rows = self.scanner_get_list(id, page)?;
            if rows.is_empty() {
                break;
            }
            out.extend(rows);
        }
        self.scanner_close(id)?;
        Ok(out)
    }

    /// `getRowOrBefore`: the cells of `family` in the row at or before `row`.
    pub fn get_row_or_before(
        &mut self,
        table: &[u8],
        row: &[u8],
        family: &[u8],
    ) -> ClientResult<Vec<TCell>> {
        let a = args::GetRowOrBefore {
            table_name: Some(bytes(table)),
            row: Some(bytes(row)),
            family: Some(bytes(family)),
        };
        self.call("getRowOrBefore", a.to_value())
    }

    /// `getRegionInfo` of a meta row key (`<table>,<row>,<suffix>`).
    pub fn get_region_info(&mut self, meta_row: &[u8]) -> ClientResult<TRegionInfo> {
        let a = args::GetRegionInfo {
            row: Some(bytes(meta_row)),
        };
        self.call("getRegionInfo", a.to_value())
    }

    /// `append`: returns the new values.
    pub fn append(&mut self, append: TAppend) -> ClientResult<Vec<TCell>> {
        let a = args::Append {
            append: Some(append),
        };
        self.call("append", a.to_value())
    }

    /// `checkAndPut`: `value` `None` checks that the column is absent.
    pub fn check_and_put(
        &mut self,
        table: &[u8],
        row: &[u8],
        column: &[u8],
        value: Option<&[u8]>,
        put: Mutation,
    ) -> ClientResult<bool> {
        let a = args::CheckAndPut {
            table_name: Some(bytes(table)),
            row: Some(bytes(row)),
            column: Some(bytes(column)),
            value: value.map(bytes),
            mput: Some(put),
            attributes: Some(BTreeMap::new()),
        };
        self.call("checkAndPut", a.to_value())
    }

    /// `getThriftServerType` (1: Thrift1).
    pub fn get_thrift_server_type(&mut self) -> ClientResult<i32> {
        self.call("getThriftServerType", args::Empty::default().to_value())
    }

    /// `getClusterId`.
    pub fn get_cluster_id(&mut self) -> ClientResult<String> {
        self.call("getClusterId", args::Empty::default().to_value())
    }
}

/// A put of `column` (`family:qualifier`) for `mutateRow(s)`.
pub fn put(column: &[u8], value: &[u8]) -> Mutation {
    Mutation {
        is_delete: Some(false),
        column: Some(bytes(column)),
        value: Some(bytes(value)),
        write_to_wal: Some(true),
    }
}

/// A delete of `column` (`family` or `family:qualifier`) for `mutateRow(s)`.
pub fn delete(column: &[u8]) -> Mutation {
    Mutation {
        is_delete: Some(true),
        column: Some(bytes(column)),
        value: None,
        write_to_wal: Some(true),
    }
}

/// A column family for `createTable` with Thrift's defaults (3 versions).
pub fn family(name: &str) -> ColumnDescriptor {
    ColumnDescriptor {
        name: Some(Bytes::from(format!("{name}:"))),
        max_versions: Some(3),
        compression: Some("NONE".into()),
        in_memory: Some(false),
        bloom_filter_type: Some("NONE".into()),
        bloom_filter_vector_size: Some(0),
        bloom_filter_nb_hashes: Some(0),
        block_cache_enabled: Some(false),
        time_to_live: Some(i32::MAX),
    }
}

/// A method's reply struct: its result (field 0), if any, or the declared
/// exception `exception` decodes from the field id it came in (`None` for
/// ids the method does not declare, which are skipped). Both services'
/// clients read replies through this.
pub(crate) fn result_or_exception(
    reply: Value,
    exception: impl Fn(i16, Value) -> Option<Result<ClientError, String>>,
) -> ClientResult<Option<Value>> {
    let Value::Struct(fields) = reply else {
        return Err(ClientError::Protocol("result is not a struct".into()));
    };
    let mut success = None;
    for (id, value) in fields {
        if id == 0 {
            success = Some(value);
        } else if let Some(decoded) = exception(id, value) {
            return Err(decoded.unwrap_or_else(ClientError::Protocol));
        }
    }
    Ok(success)
}
