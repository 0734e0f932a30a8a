//! Test support: a server on a fresh database and a minimal blocking HTTP
//! client (one connection per request, `Connection: close`), so the tests
//! see exactly the bytes the gateway sends.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;

use basalt::Database;
use basalt_rest::{RestConfig, RestServer};

/// A database in a temporary directory and a REST server on a free port.
pub struct Fixture {
    pub db: Database,
    pub server: Option<RestServer>,
    pub addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Fixture {
    pub fn new() -> Fixture {
        Fixture::with(RestConfig::default())
    }

    pub fn with(config: RestConfig) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let config = RestConfig { port: 0, ..config };
        let server = RestServer::start(db.clone(), &config).unwrap();
        let addr = server.local_addr();
        Fixture {
            db,
            server: Some(server),
            addr,
            _dir: dir,
        }
    }

    pub fn server(&self) -> &RestServer {
        self.server.as_ref().unwrap()
    }

    /// Sends one request and reads the whole answer.
    pub fn send(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
        request(self.addr, method, path, headers, body)
    }

    pub fn get(&self, path: &str, accept: &str) -> Reply {
        self.send("GET", path, &[("Accept", accept)], b"")
    }

    pub fn put(&self, path: &str, content_type: &str, body: &[u8]) -> Reply {
        self.send("PUT", path, &[("Content-Type", content_type)], body)
    }

    pub fn post(&self, path: &str, content_type: &str, body: &[u8]) -> Reply {
        self.send("POST", path, &[("Content-Type", content_type)], body)
    }

    pub fn delete(&self, path: &str) -> Reply {
        self.send("DELETE", path, &[], b"")
    }

    /// Creates a table through the embedded API.
    pub fn create_table(&self, name: &str, families: &[&str]) {
        let mut descriptor = basalt::TableDescriptor::new(name);
        for family in families {
            descriptor =
                descriptor.family(basalt::ColumnFamilyDescriptor::new(*family).max_versions(5));
        }
        self.db.create_table(descriptor).unwrap();
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            server.shutdown();
        }
        let _ = self.db.close();
    }
}

/// An HTTP answer.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    // One write: headers and body arrive together, so a short idle
    // timeout in a test never sees a pause between them.
    let mut request = head.into_bytes();
    request.extend_from_slice(body);
    parse_reply(&exchange_raw(addr, &request))
}

/// Writes `bytes` as they are on a new connection and reads until the
/// server closes it: whatever it answered, perhaps nothing. The read
/// timeout is a hang guard only.
pub fn exchange_raw(addr: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    // A refused connection may be closed before the write lands.
    let _ = stream.write_all(bytes);
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    raw
}

/// A connection held open mid-request (`bytes` written, the rest never
/// sent), returned once the server counts it.
pub fn hold(f: &Fixture, bytes: &[u8]) -> TcpStream {
    let open = f.server().open_connections();
    let mut stream = TcpStream::connect(f.addr).unwrap();
    stream.write_all(bytes).unwrap();
    while f.server().open_connections() <= open {
        std::thread::sleep(Duration::from_millis(5));
    }
    stream
}

pub fn parse_reply(raw: &[u8]) -> Reply {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    let status = status_line.split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let body = raw[split + 4..].to_vec();
    Reply {
        status,
        headers,
        body,
    }
}

pub fn b64(bytes: &[u8]) -> String {
    BASE64.encode(bytes)
}

pub fn unb64(text: &str) -> Vec<u8> {
    BASE64.decode(text).unwrap()
}

/// A JSON cell set of one row.
pub fn json_row(row: &[u8], cells: &[(&[u8], Option<i64>, &[u8])]) -> Vec<u8> {
    let cells: Vec<serde_json::Value> = cells
        .iter()
        .map(|(column, ts, value)| {
            let mut cell = serde_json::json!({ "column": b64(column), "$": b64(value) });
            if let Some(ts) = ts {
                cell["timestamp"] = serde_json::json!(ts);
            }
            cell
        })
        .collect();
    serde_json::json!({ "Row": [{ "key": b64(row), "Cell": cells }] })
        .to_string()
        .into_bytes()
}

/// A cell as a test compares it: (row, column, timestamp, value).
pub type CellTuple = (Vec<u8>, Vec<u8>, i64, Vec<u8>);

/// Every cell of a JSON cell set.
pub fn json_cells(reply: &Reply) -> Vec<CellTuple> {
    let value = reply.json();
    let mut out = Vec::new();
    for row in value["Row"].as_array().unwrap() {
        let key = unb64(row["key"].as_str().unwrap());
        for cell in row["Cell"].as_array().unwrap() {
            out.push((
                key.clone(),
                unb64(cell["column"].as_str().unwrap()),
                cell["timestamp"].as_i64().unwrap(),
                unb64(cell["$"].as_str().unwrap()),
            ));
        }
    }
    out
}
