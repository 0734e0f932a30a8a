//! A minimal blocking HTTP/1.1 GET, over TLS or not, for the TLS tests of
//! the HTTP servers (REST, the web UI): one connection per request,
//! `Connection: close`, the whole answer read.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

/// The status and body of an answer.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: String,
}

/// GETs `path` from `addr`, over TLS with `tls` (the server's certificate
/// must name 127.0.0.1), in plaintext without: the answer, or what went
/// wrong (a refused handshake, a connection closed with no answer).
pub fn get(
    addr: SocketAddr,
    path: &str,
    tls: Option<Arc<rustls::ClientConfig>>,
) -> Result<Answer, String> {
    let tcp = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    tcp.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    tcp.set_write_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAccept: text/plain\r\nConnection: close\r\n\r\n",
        addr.port()
    );
    let mut raw = Vec::new();
    match tls {
        Some(config) => {
            let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
            let connection = rustls::ClientConnection::new(config, name).unwrap();
            let mut stream = rustls::StreamOwned::new(connection, tcp);
            stream
                .write_all(request.as_bytes())
                .map_err(|e| e.to_string())?;
            read_all(&mut stream, &mut raw)?;
        }
        None => {
            let mut stream = tcp;
            stream
                .write_all(request.as_bytes())
                .map_err(|e| e.to_string())?;
            read_all(&mut stream, &mut raw)?;
        }
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("no HTTP answer: {raw:?}"))?;
    let status = head
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("no HTTP status line: {head:?}"))?;
    Ok(Answer {
        status,
        body: body.to_string(),
    })
}

/// Reads until the end of the stream; a peer that closes without TLS's
/// close_notify after a whole answer (as servers may) still counts as an
/// answer when bytes came.
fn read_all(stream: &mut impl Read, out: &mut Vec<u8>) -> Result<(), String> {
    match stream.read_to_end(out) {
        Ok(_) => Ok(()),
        Err(e) if !out.is_empty() && e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}
