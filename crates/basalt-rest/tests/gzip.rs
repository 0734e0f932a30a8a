//! gzip both ways: a `Content-Encoding: gzip` body is inflated (never past
//! `max_request_bytes`), and `Accept-Encoding: gzip` gets a gzipped answer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};

use basalt_rest::RestConfig;
use common::{json_row, Fixture};

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .unwrap();
    out
}

#[test]
fn a_gzipped_body_is_written_and_a_gzip_answer_inflates_to_the_plain_one() {
    let f = Fixture::new();
    f.create_table("t", &["cf"]);
    let body = gzip(&json_row(b"r", &[(b"cf:a", Some(5), b"value")]));
    let put = f.send(
        "PUT",
        "/t/r",
        &[
            ("Content-Type", "application/json"),
            ("Content-Encoding", "gzip"),
        ],
        &body,
    );
    assert_eq!(put.status, 200, "{}", put.text());
    let plain = f.get("/t/r", "application/json");
    let zipped = f.send(
        "GET",
        "/t/r",
        &[
            ("Accept", "application/json"),
            ("Accept-Encoding", "deflate, gzip"),
        ],
        b"",
    );
    assert_eq!(zipped.header("Content-Encoding"), Some("gzip"));
    assert_eq!(gunzip(&zipped.body), plain.body);
    assert_eq!(plain.header("Content-Encoding"), None);
    let refused = f.send(
        "GET",
        "/t/r",
        &[
            ("Accept", "application/json"),
            ("Accept-Encoding", "gzip;q=0"),
        ],
        b"",
    );
    assert_eq!(refused.header("Content-Encoding"), None);
}

#[test]
fn a_gzip_body_inflating_past_the_limit_is_413_and_a_broken_one_400() {
    let f = Fixture::with(RestConfig {
        max_request_bytes: 4096,
        ..RestConfig::default()
    });
    f.create_table("t", &["cf"]);
    // A few hundred bytes on the wire, a megabyte inflated.
    let bomb = gzip(&vec![b' '; 1 << 20]);
    assert!(bomb.len() < 4096);
    let reply = f.send(
        "PUT",
        "/t/r",
        &[
            ("Content-Type", "application/json"),
            ("Content-Encoding", "gzip"),
        ],
        &bomb,
    );
    assert_eq!(reply.status, 413, "{}", reply.text());
    let broken = f.send(
        "PUT",
        "/t/r",
        &[
            ("Content-Type", "application/json"),
            ("Content-Encoding", "gzip"),
        ],
        b"not gzip at all",
    );
    assert_eq!(broken.status, 400);
    assert!(broken.text().contains("gzip"), "{}", broken.text());
}
