//! The allocator's own figures as numbers of the info server (the status
//! page, `/api/server-metrics` under `allocator`, and `/metrics`): what
//! the process really holds, beside what the server counts (memstores,
//! block cache). A gap between the two is memory nobody budgets for.

use std::sync::Arc;

use basalt_info::prometheus::Kind;
use basalt_info::{ExtraGroup, ExtraMetrics, ExtraSample};
use tikv_jemalloc_ctl::{epoch, stats};

/// One statistic: Prometheus name, JSON key, label, help, and its reader.
type Figure = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    fn() -> tikv_jemalloc_ctl::Result<usize>,
);

/// A reader of jemalloc's statistics (the binary's allocator, main.rs).
pub fn reader() -> ExtraMetrics {
    Arc::new(|| {
        // jemalloc's statistics are a snapshot refreshed by advancing its
        // epoch; without it they stay as first read.
        let refreshed = epoch::advance().is_ok();
        let figures: [Figure; 4] = [
            (
                "basalt_allocator_allocated_bytes",
                "allocated_bytes",
                "Allocated",
                "Bytes the process has allocated and not freed (jemalloc's stats.allocated).",
                stats::allocated::read,
            ),
            (
                "basalt_allocator_active_bytes",
                "active_bytes",
                "In active pages",
                "Bytes in the allocator's pages that hold allocations (stats.active): allocated plus fragmentation within them.",
                stats::active::read,
            ),
            (
                "basalt_allocator_resident_bytes",
                "resident_bytes",
                "Resident",
                "Bytes of the allocator's memory resident in RAM (stats.resident), freed pages not yet returned included.",
                stats::resident::read,
            ),
            (
                "basalt_allocator_retained_bytes",
                "retained_bytes",
                "Retained (unmapped from RAM)",
                "Virtual memory the allocator kept for reuse after returning its pages to the system (stats.retained).",
                stats::retained::read,
            ),
        ];
        let samples = figures
            .into_iter()
            .filter(|_| refreshed)
            .filter_map(|(name, key, label, help, read)| {
                read().ok().map(|value| ExtraSample {
                    name: name.into(),
                    key: key.into(),
                    label: label.into(),
                    kind: Kind::Gauge,
                    help: help.into(),
                    value: value as f64,
                })
            })
            .collect();
        ExtraGroup {
            key: "allocator".into(),
            title: "Allocator (jemalloc)".into(),
            samples,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allocator_reports_what_it_holds() {
        let held = vec![1u8; 4 << 20];
        let group = reader()();
        let value = |key: &str| {
            group
                .samples
                .iter()
                .find(|s| s.key == key)
                .map(|s| s.value)
                .unwrap_or_else(|| panic!("no {key} in {group:?}"))
        };
        assert!(value("allocated_bytes") >= held.len() as f64);
        assert!(value("resident_bytes") >= value("allocated_bytes") / 2.0);
        assert!(value("active_bytes") >= value("allocated_bytes"));
        drop(held);
    }

    #[test]
    fn the_binary_allocator_returns_freed_pages_from_a_background_thread() {
        // Compiled in from .cargo/config.toml: a build that lost it would
        // keep freed memstore pages resident for ten seconds.
        assert_eq!(
            tikv_jemalloc_ctl::background_thread::read().ok(),
            Some(true)
        );
    }
}
