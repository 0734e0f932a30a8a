//! Memory under hostile messages, measured on the real `basalt serve`
//! process: eight clients at once each send a 16 MiB message (the largest
//! allowed) of sixteen million one-byte values, the shape that costs most
//! decoded (a 40-byte value per byte sent; 1.47 GB of server before the
//! bound). Every client gets its refusal and the server's peak resident
//! size stays under the bound README's Configuration section states.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use bytes::{BufMut, BytesMut};

use basalt_thrift::protocol::{MessageType, Protocol};
use basalt_thrift::types::{app_error, TApplicationException, Thrift};
use basalt_thrift::Client;

mod common;

/// The bound on the server's peak resident size (VmHWM), as README states:
/// the in-flight budget (64 MiB of framed bytes), the unframed messages
/// being received (4 x 16 MiB), and the process itself, with room to spare.
const PEAK_RSS_BOUND_BYTES: u64 = 400 * 1024 * 1024;

/// The largest message `basalt serve` accepts by default.
const MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// Hang guard only.
const TIMEOUT: Duration = Duration::from_secs(120);

/// A strict binary `getRow` call whose argument 1 is a list of one-byte
/// values filling `MESSAGE_BYTES`.
fn worst_case_message() -> Vec<u8> {
    let name = b"getRow";
    let overhead = 4 + 4 + name.len() + 4 + 3 + 5 + 1;
    let n = MESSAGE_BYTES - overhead;
    let mut out = BytesMut::with_capacity(MESSAGE_BYTES);
    out.put_u32(0x8001_0001);
    out.put_i32(name.len() as i32);
    out.put_slice(name);
    out.put_i32(42);
    out.put_u8(15); // field 1: list
    out.put_i16(1);
    out.put_u8(3); // of bytes
    out.put_i32(n as i32);
    out.put_bytes(1, n);
    out.put_u8(0);
    assert_eq!(out.len(), MESSAGE_BYTES);
    out.to_vec()
}

fn peak_rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .unwrap()
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kb * 1024
}

#[test]
fn eight_senders_of_sixteen_mib_of_tiny_elements_stay_under_the_memory_bound() {
    let dir = tempfile::tempdir().unwrap();
    let server = common::serve(dir.path());
    let port = server.port;
    let message = std::sync::Arc::new(worst_case_message());
    let senders: Vec<_> = (0..8)
        .map(|i| {
            let message = std::sync::Arc::clone(&message);
            std::thread::spawn(move || {
                // Half framed, half not: both paths are bounded.
                let framed = i % 2 == 0;
                let mut c =
                    Client::connect(("127.0.0.1", port), framed, Protocol::Binary { strict: true })
                        .unwrap();
                c.set_timeout(Some(TIMEOUT)).unwrap();
                if framed {
                    c.stream()
                        .write_all(&(message.len() as u32).to_be_bytes())
                        .unwrap();
                }
                c.stream().write_all(&message).unwrap();
                let (header, body) = c.read_reply().unwrap();
                assert_eq!(header.kind, MessageType::Exception);
                let e = TApplicationException::from_value(body).unwrap();
                assert_eq!(e.kind, Some(app_error::PROTOCOL_ERROR), "{e:?}");
                let m = e.message.unwrap_or_default();
                assert!(m.contains("decoded"), "{m}");
                if !framed {
                    // Unframed, there is no telling where the next message
                    // would start: closed.
                    let mut rest = [0u8; 16];
                    let _ = c.stream().read(&mut rest);
                }
            })
        })
        .collect();
    for sender in senders {
        sender.join().unwrap();
    }
    // The server still serves.
    let mut c = Client::connect(("127.0.0.1", port), false, Protocol::Binary { strict: true })
        .unwrap();
    c.set_timeout(Some(TIMEOUT)).unwrap();
    c.get_table_names().unwrap();
    drop(TcpStream::connect(("127.0.0.1", port)));

    let peak = peak_rss_bytes(server.child.id());
    eprintln!("basalt serve peak RSS: {} MiB", peak / (1024 * 1024));
    assert!(
        peak < PEAK_RSS_BOUND_BYTES,
        "peak RSS {} MiB is over the {} MiB bound",
        peak / (1024 * 1024),
        PEAK_RSS_BOUND_BYTES / (1024 * 1024)
    );
}
