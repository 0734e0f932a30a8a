//! Memory under hostile messages, measured on the real `basalt serve`
//! process: eight clients at once each send a 16 MiB message (the largest
//! allowed) of sixteen million one-byte values, the shape that costs most
//! decoded (a 40-byte value per byte sent; 1.47 GB of server before the
//! bound), and eight more each send the message with the largest decoded
//! form allowed (40 MiB). Every client gets its answer and the server's
//! peak resident size stays under the bound README's Configuration section
//! states.
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
/// the in-flight budget (64 MiB of request bytes and 64 MiB decoded), the
/// unframed messages being received (4 x 16 MiB), and the process itself
/// (about 30 MiB), with room to spare.
const PEAK_RSS_BOUND_BYTES: u64 = 256 * 1024 * 1024;

/// The largest message `basalt serve` accepts by default.
const MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// Hang guard only.
const TIMEOUT: Duration = Duration::from_secs(120);

/// A strict binary `getRow` call whose argument 1 is a list of one-byte
/// values filling `MESSAGE_BYTES`.
fn worst_case_message() -> Vec<u8> {
    let name = b"getRow";
    let overhead = 4 + 4 + name.len() + 4 + 3 + 5 + 1;
    let message = list_message(3, 1, MESSAGE_BYTES - overhead);
    assert_eq!(message.len(), MESSAGE_BYTES);
    message
}

/// The largest decoded form allowed: a list of 2^20 two-byte values, a
/// 2 MiB message taking 40 MiB decoded (under 32 times its size and the
/// 64 MiB budget), so it is decoded, then refused by `getRow` for its
/// argument's type.
fn largest_decoded_message() -> Vec<u8> {
    list_message(6, 2, 1 << 20)
}

/// `getRow` with argument 1 a list of `n` values of type `code`, each
/// `width` bytes.
fn list_message(code: u8, width: usize, n: usize) -> Vec<u8> {
    let name = b"getRow";
    let mut out = BytesMut::with_capacity(n * width + 64);
    out.put_u32(0x8001_0001);
    out.put_i32(name.len() as i32);
    out.put_slice(name);
    out.put_i32(42);
    out.put_u8(15); // field 1: list
    out.put_i16(1);
    out.put_u8(code);
    out.put_i32(n as i32);
    out.put_bytes(1, n * width);
    out.put_u8(0);
    out.to_vec()
}

#[test]
fn eight_senders_of_sixteen_mib_of_tiny_elements_and_eight_of_the_largest_decoded_form_stay_under_the_memory_bound(
) {
    let dir = tempfile::tempdir().unwrap();
    let server = common::serve(dir.path());
    let port = server.port;
    let worst = std::sync::Arc::new(worst_case_message());
    let largest = std::sync::Arc::new(largest_decoded_message());
    let senders: Vec<_> = (0..16)
        .map(|i| {
            // Eight senders of the worst case (refused before decoding),
            // eight of the largest decoded form allowed (decoded).
            let (message, expected) = if i < 8 {
                (std::sync::Arc::clone(&worst), "decoded")
            } else {
                (std::sync::Arc::clone(&largest), "table_name")
            };
            std::thread::spawn(move || {
                // Half framed, half not: both paths are bounded.
                let framed = i % 2 == 0;
                let mut c = Client::connect(
                    ("127.0.0.1", port),
                    framed,
                    Protocol::Binary { strict: true },
                )
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
                assert!(m.contains(expected), "{m}");
                if !framed && i < 8 {
                    // An unframed message refused unread leaves no telling
                    // where the next would start: closed.
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
    let mut c = Client::connect(
        ("127.0.0.1", port),
        false,
        Protocol::Binary { strict: true },
    )
    .unwrap();
    c.set_timeout(Some(TIMEOUT)).unwrap();
    c.get_table_names().unwrap();
    drop(TcpStream::connect(("127.0.0.1", port)));

    let peak = common::peak_rss_bytes(server.child.id());
    eprintln!("basalt serve peak RSS: {} MiB", peak / (1024 * 1024));
    assert!(
        peak < PEAK_RSS_BOUND_BYTES,
        "peak RSS {} MiB is over the {} MiB bound",
        peak / (1024 * 1024),
        PEAK_RSS_BOUND_BYTES / (1024 * 1024)
    );
}
