//! The native RPC gateway's replication-sink counters (Basalt as a peer
//! of a replicating HBase, `basalt_rpc::replication_sink`) as numbers of
//! the info server: the status page, `/api/server-metrics` under
//! `replication_sink`, and `/metrics`.

use std::sync::Arc;

use basalt_info::prometheus::Kind;
use basalt_info::{ExtraGroup, ExtraMetrics, ExtraSample};
use basalt_rpc::RpcServer;

/// A reader of `server`'s sink counters.
pub fn reader(server: &RpcServer) -> ExtraMetrics {
    let metrics = Arc::clone(&server.context().replication_sink);
    Arc::new(move || {
        let m = metrics.snapshot();
        let sample =
            |name: &str, key: &str, label: &str, kind: Kind, help: &str, value: u64| ExtraSample {
                name: name.into(),
                key: key.into(),
                label: label.into(),
                kind,
                help: help.into(),
                value: value as f64,
            };
        ExtraGroup {
            key: "replication_sink".into(),
            title: "Replication sink (edits from HBase)".into(),
            samples: vec![
                sample(
                    "basalt_replication_sink_batches_total",
                    "batches",
                    "Batches applied",
                    Kind::Counter,
                    "ReplicateWALEntry calls applied (batches of WAL entries a replicating HBase sent).",
                    m.batches,
                ),
                sample(
                    "basalt_replication_sink_failed_batches_total",
                    "failed_batches",
                    "Batches refused",
                    Kind::Counter,
                    "ReplicateWALEntry calls refused or failed (the source sends them again).",
                    m.failed_batches,
                ),
                sample(
                    "basalt_replication_sink_entries_total",
                    "entries",
                    "WAL entries applied",
                    Kind::Counter,
                    "WAL entries applied.",
                    m.entries,
                ),
                sample(
                    "basalt_replication_sink_cells_total",
                    "cells",
                    "Cells applied",
                    Kind::Counter,
                    "Cells applied (puts and delete markers).",
                    m.cells,
                ),
                sample(
                    "basalt_replication_sink_skipped_cells_total",
                    "skipped_cells",
                    "WAL marker cells skipped",
                    Kind::Counter,
                    "WAL meta cells skipped (markers that carry no data).",
                    m.skipped_cells,
                ),
                sample(
                    "basalt_replication_sink_age_of_last_applied_op_milliseconds",
                    "age_of_last_applied_ms",
                    "Age of the last applied edit (ms)",
                    Kind::Gauge,
                    "How old the last applied WAL entry was when it was applied: apply time minus its write time on the source (HBase's ageOfLastAppliedOp).",
                    m.age_of_last_applied_ms,
                ),
                sample(
                    "basalt_replication_sink_last_applied_write_time_milliseconds",
                    "last_write_time_ms",
                    "Source write time of the last applied edit (ms since the epoch)",
                    Kind::Gauge,
                    "Write time on the source of the last applied WAL entry, milliseconds since the epoch (0: none yet).",
                    m.last_write_time_ms,
                ),
                sample(
                    "basalt_replication_sink_last_applied_time_milliseconds",
                    "last_applied_at_ms",
                    "When the last batch was applied (ms since the epoch)",
                    Kind::Gauge,
                    "When the last batch was applied here, milliseconds since the epoch (0: none yet).",
                    m.last_applied_at_ms,
                ),
            ],
        }
    })
}
