#!/usr/bin/env python3
"""Writes the report of scripts/bench-cluster: <out>.md and <out>.json.

    bench_cluster_report.py WORK OUT RECORDS OPS THREADS
        reads WORK/<side>.json (one YCSB report per line, per phase) for
        the sides serve, serve-shared (optional) and cluster, and
        WORK/recovery.log (the chaos test's RECOVERY lines);
    bench_cluster_report.py --from-json OUT.json OUT RECORDS OPS THREADS
        rewrites the Markdown of an earlier run from its JSON.

Every operation of a phase gets its own row (YCSB A is half reads, half
updates, and the two cost very different things in a cluster).
"""
import json
import re
import sys

SIDES = [
    ("serve", "serve"),
    ("serve-shared", "serve, shared dir"),
    ("cluster", "cluster"),
]
PHASES = ["load", "A", "C (warm-up)", "C"]


def load_work(work):
    runs = {}
    for side, _ in SIDES:
        try:
            with open(f"{work}/{side}.json") as f:
                runs[side] = [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            continue
    try:
        with open(f"{work}/recovery.log") as f:
            recovery = [line.strip() for line in f if line.strip()]
    except FileNotFoundError:
        recovery = []
    return runs, recovery


def main(argv):
    if argv[1] == "--from-json":
        with open(argv[2]) as f:
            saved = json.load(f)
        runs, recovery = saved["runs"], saved["recovery"]
        out = argv[3]
        records, ops, threads = map(int, argv[4:7])
    else:
        runs, recovery = load_work(argv[1])
        out = argv[2]
        records, ops, threads = map(int, argv[3:6])
    sides = [(s, label) for s, label in SIDES if s in runs]

    failed = []
    rows = []
    for i, phase in enumerate(PHASES):
        reports = {s: runs[s][i] for s, _ in sides}
        for side, r in reports.items():
            if r.get("errors") or r.get("reads_not_found"):
                failed.append(
                    f"{side} {phase}: {r.get('errors')} errors, "
                    f"{r.get('reads_not_found')} not found; {r.get('first_errors', [])[:3]}"
                )
        # The operations of the phase, the most frequent first.
        first = reports[sides[0][0]]
        op_names = [op for op, s in sorted(first["ops"], key=lambda kv: -kv[1]["operations"])]
        for op in op_names:
            cells = []
            for side, _ in sides:
                stats = dict(reports[side]["ops"]).get(op)
                cells.append((reports[side]["throughput"], stats["p99_us"] if stats else None))
            rows.append((phase, op, cells))

    header = "| phase | op | " + " | ".join(
        f"{label} ops/s | {label} p99 µs" for _, label in sides
    )
    has_cluster = "cluster" in runs
    ratio_cols = []
    if has_cluster:
        ratio_cols = [("serve", "cluster / serve")]
        if "serve-shared" in runs:
            ratio_cols.append(("serve-shared", "cluster / serve, shared dir"))
    header += "".join(f" | {name}" for _, name in ratio_cols) + " |"
    align = "|---|---|" + "---:|" * (2 * len(sides) + len(ratio_cols))
    lines = [
        "# YCSB over Thrift: a local three-server cluster vs one `basalt serve`",
        "",
        "Produced by `scripts/bench-cluster`. In one run: `basalt serve` on a local data "
        "directory; "
        + (
            "`basalt serve --storage file://...`, one process with the cluster's "
            "storage (store files and the write-ahead log in a shared directory through the "
            "object-storage file store, the log group-committed and appended to a segment file); "
            if "serve-shared" in runs
            else "(this run predates the script's middle side, one process on the cluster's "
            "shared-directory storage) "
        )
        + "then `basalt local-cluster` (ZooKeeper, a master, three region servers, store files "
        "and write-ahead logs in a shared directory through the object-storage file store). "
        "Every side has `usertable` pre-split at user1..user9; "
        f"{records} records of 10 fields x 100 bytes, {ops} operations per run phase, "
        f"{threads} Thrift connections (spread over the cluster's three gateways in turn, "
        "each forwarding rows of regions held elsewhere). The client runs on the same 2-core "
        "machine as every server: the cluster's processes compete for the same cores, so "
        "this measures the cost of the cluster's hops and its shared-storage log, not "
        "scale-out. Throughput is the phase's (all its operations); p99 is per operation.",
        "",
        header,
        align,
    ]
    for phase, op, cells in rows:
        parts = [phase, op]
        for tp, p99 in cells:
            parts.append(f"{tp:,.0f}")
            parts.append(f"{p99:,.0f}" if p99 is not None else "-")
        index = {s: n for n, (s, _) in enumerate(sides)}
        for base, _ in ratio_cols:
            b = cells[index[base]][0]
            c = cells[index["cluster"]][0]
            parts.append(f"{c / b:.2f}x" if b else "-")
        lines.append("| " + " | ".join(parts) + " |")

    times = [
        float(m.group(1))
        for line in recovery
        for m in [re.search(r"open again after ([0-9.]+) s", line)]
        if m
    ]
    lines += [
        "",
        "## Recovery after kill -9 of a region server",
        "",
        "The chaos test `a_killed_region_server_loses_no_acknowledged_write_and_its_regions_"
        "reopen_elsewhere` (crates/basalt-cli/tests/cluster.rs): ZooKeeper session timeout 2 s, "
        "four Thrift writers on the two other servers, kill -9 of the third; the time is from "
        "the kill to the master's status showing every region open on a live server and no dead "
        "server left (detection = session expiry, then fencing of the dead server's log, replay "
        "and flush of each region's edits on its new server, deletion of the log). Target: "
        "under 10 s.",
        "",
    ]
    lines += [f"- {line}" for line in recovery] or ["- (no run)"]
    if times:
        median = sorted(times)[len(times) // 2]
        verdict = "**met**." if max(times) < 10 else "**not met** in every run."
        lines += ["", f"Median: {median:.2f} s over {len(times)} runs: {verdict}"]
    lines += ["", "## Failed phases", ""]
    lines += [f"- {f}" for f in failed] or ["None: no errors, every read found its record."]
    with open(out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    if argv[1] != "--from-json":
        with open(out + ".json", "w") as f:
            json.dump({"runs": runs, "recovery": recovery}, f, indent=1)
    print("wrote", out + ".md")


if __name__ == "__main__":
    main(sys.argv)
