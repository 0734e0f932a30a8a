//! A known workload served by the info server, for the browser test
//! (`scripts/webui-suite`) and for looking at the heatmap by hand.
//!
//! Opens a database in a temporary directory with a manual clock, creates
//! two tables pre-split into four regions and drives each over 30
//! minutes of manual time (no waiting: the clock is advanced):
//! - `monotonic`: split at `t00025000`, `t00050000`, `t00075000`; row keys
//!   `t` + an 8-digit counter from 00100000 up, past the last split point
//!   (a timestamp or sequence key), so every write lands in the last
//!   region, and each minute a little higher in its key range;
//! - `salted`: split at `1`, `2`, `3`; row keys `<id % 4><id, 8 digits>`
//!   (a one-digit salt bucket), so writes spread over the four regions.
//!
//! Each minute also reads back some of that minute's rows, so the reads
//! map has something to show. Then it serves the info server and prints
//! `info server listening on http://ADDR/` on stdout; it stops when
//! stdin closes or on SIGTERM / SIGINT.
//!
//! ```text
//! cargo run -p basalt-info --example heatmap_demo -- --port 16010
//! ```

use std::io::Read;
use std::sync::Arc;

use basalt::{ColumnFamilyDescriptor, Database, Get, ManualClock, Options, Put, TableDescriptor};
use basalt_info::{InfoConfig, InfoServer};
use bytes::Bytes;

/// 2023-11-14 22:00 UTC, a minute boundary.
const START_MS: i64 = 1_699_999_200_000;
/// Minutes of workload.
const MINUTES: u64 = 30;
/// Writes per table per minute.
const WRITES_PER_MINUTE: u64 = 200;
/// Of them, reads back per minute.
const READS_PER_MINUTE: u64 = 40;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut port = 0u16;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => port = args.next().ok_or("--port needs a number")?.parse()?,
            other => return Err(format!("unknown argument {other:?} (only --port N)").into()),
        }
    }
    let dir = tempfile::tempdir()?;
    let clock = Arc::new(ManualClock::new(START_MS));
    let db = Database::builder(Options::new(dir.path()))
        .clock(clock.clone())
        .open()?;
    let splits = |keys: &[&str]| -> Vec<Bytes> {
        keys.iter()
            .map(|k| Bytes::copy_from_slice(k.as_bytes()))
            .collect()
    };
    let descriptor = |name: &str| {
        TableDescriptor::new(name).family(ColumnFamilyDescriptor::new("d").max_versions(1))
    };
    db.create_table_with_splits(
        descriptor("monotonic"),
        &splits(&["t00025000", "t00050000", "t00075000"]),
    )?;
    db.create_table_with_splits(descriptor("salted"), &splits(&["1", "2", "3"]))?;
    let monotonic = db.table("monotonic")?;
    let salted = db.table("salted")?;
    let value = Bytes::from(vec![b'v'; 100]);
    let mut id = 0u64;
    for _ in 0..MINUTES {
        let first = id;
        for _ in 0..WRITES_PER_MINUTE {
            let mono = format!("t{:08}", 100_000 + id);
            let salt = format!("{}{:08}", id % 4, id);
            monotonic.put(&Put::new(mono).add("d", "q", value.clone()))?;
            salted.put(&Put::new(salt).add("d", "q", value.clone()))?;
            id += 1;
        }
        // Reads of this minute's rows, spread over the minute's range.
        for i in 0..READS_PER_MINUTE {
            let n = first + i * WRITES_PER_MINUTE / READS_PER_MINUTE;
            monotonic.get(&Get::new(format!("t{:08}", 100_000 + n)))?;
            salted.get(&Get::new(format!("{}{:08}", n % 4, n)))?;
        }
        clock.advance(60_000);
    }
    let server = InfoServer::bind(
        db.clone(),
        &InfoConfig {
            port,
            port_auto: false,
            ..InfoConfig::default()
        },
    )?;
    db.register_gateway("info", server.local_addr());
    println!("info server listening on http://{}/", server.local_addr());
    wait_for_stop()?;
    server.shutdown();
    db.close()?;
    Ok(())
}

/// Returns when stdin closes, or on SIGTERM or SIGINT.
fn wait_for_stop() -> Result<(), Box<dyn std::error::Error>> {
    let (closed_tx, closed_rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut sink);
        let _ = closed_tx.send(());
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    runtime.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
            _ = closed_rx => {}
        }
        Ok::<(), std::io::Error>(())
    })?;
    // The stdin thread may still be reading: it ends with the process.
    runtime.shutdown_background();
    Ok(())
}
