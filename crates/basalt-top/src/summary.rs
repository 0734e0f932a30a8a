//! The summary lines above the table, hbtop's header in Basalt's terms:
//! time and where from, the cluster (master, live and dead region
//! servers), tables and regions (in transition, failed), the average load
//! and the aggregate request rate with how it was measured.

use crate::format;
use crate::model::View;
use crate::source::Snapshot;

/// The summary lines of a refresh.
pub fn lines(snapshot: &Snapshot, view: &View) -> Vec<String> {
    let s = &snapshot.summary;
    let uptime = match s.uptime_ms {
        Some(ms) => format!("up {}", format::uptime(ms)),
        None => "uptime not reported".to_string(),
    };
    let first = format!(
        "basalt top {} - {} UTC, {}, {uptime}",
        env!("CARGO_PKG_VERSION"),
        format::time_of_day(snapshot.wall_ms),
        s.location,
    );
    let (servers_line, live) = match &s.cluster {
        Some(c) => (
            format!(
                "Cluster: master {} (catalog version {}, {} backup); region servers: {} live, {} dead",
                c.master,
                c.catalog_version,
                c.backup_masters,
                c.live_servers.len(),
                c.dead_servers
            ),
            c.live_servers.len(),
        ),
        None => ("One process: 1 region server, 0 dead".to_string(), 1),
    };
    let in_transition = s.cluster.as_ref().map_or(0, |c| c.in_transition);
    let average = if live == 0 {
        0.0
    } else {
        s.regions as f64 / live as f64
    };
    let regions = format!(
        "Tables: {}; regions: {} ({} in transition, {} failed); average load: {average:.2} regions per server",
        s.tables, s.regions, in_transition, s.failed_regions
    );
    let r = &view.rates;
    let basis = match (r.delta_regions, r.reported_regions, r.interval_seconds) {
        (d, _, Some(secs)) if d > 0 => format!("rates over the last {secs:.1}s"),
        (_, rep, _) if rep > 0 => "rates over the server's last minute".to_string(),
        _ => "rates from the next refresh on".to_string(),
    };
    let requests = format!(
        "Aggregate requests: {}/s (reads {}/s, writes {}/s); {basis}",
        format::rate(r.total.requests),
        format::rate(r.total.read),
        format::rate(r.total.write),
    );
    vec![first, servers_line, regions, requests]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{build_view, tests::sample, ViewOptions};
    use crate::source::ClusterSummary;

    #[test]
    fn one_process_shows_one_server_and_the_rates_basis() {
        let a = sample(0, [0, 0, 0, 0]);
        let b = sample(2_000, [0, 2, 2, 6]);
        let first = lines(&a, &build_view(None, &a, &ViewOptions::default()));
        assert!(
            first[0].contains("22:13:20 UTC, 127.0.0.1:9090"),
            "{}",
            first[0]
        );
        assert_eq!(first[1], "One process: 1 region server, 0 dead");
        assert!(
            first[3].ends_with("rates from the next refresh on"),
            "{}",
            first[3]
        );
        let next = lines(&b, &build_view(Some(&a), &b, &ViewOptions::default()));
        assert_eq!(
            next[3],
            "Aggregate requests: 7.5/s (reads 2.5/s, writes 5.0/s); rates over the last 2.0s"
        );
        assert!(
            next[2].contains("regions: 4 (0 in transition, 0 failed)"),
            "{}",
            next[2]
        );
        assert!(next[2].contains("average load: 4.00"), "{}", next[2]);
    }

    #[test]
    fn a_cluster_shows_its_master_servers_and_regions_in_transition() {
        let mut a = sample(0, [0, 0, 0, 0]);
        a.summary.cluster = Some(ClusterSummary {
            master: "m,16000,1".into(),
            catalog_version: 7,
            backup_masters: 1,
            live_servers: vec!["a".into(), "b".into()],
            dead_servers: 1,
            in_transition: 3,
        });
        let l = lines(&a, &build_view(None, &a, &ViewOptions::default()));
        assert_eq!(
            l[1],
            "Cluster: master m,16000,1 (catalog version 7, 1 backup); region servers: 2 live, 1 dead"
        );
        assert!(l[2].contains("(3 in transition"), "{}", l[2]);
        assert!(l[2].contains("average load: 2.00"), "{}", l[2]);
    }
}
