"""HBase's PerformanceEvaluation (`org.apache.hadoop.hbase.
PerformanceEvaluation --nomapred`, from hbase-mapreduce 2.6.4's test jar on
the classpath hbase_reference.classpath() resolves): one command run as a
client JVM, its output kept in a log file and checked for errors it logged
and carried on from. Shared by scripts/pe-suite and scripts/bench-hbase.
"""

import os
import re
import subprocess
import time

import hbase_reference

PE_CLASS = "org.apache.hadoop.hbase.PerformanceEvaluation"

# A hang guard per PE command, not a time limit on anyone's speed.
COMMAND_TIMEOUT = int(os.environ.get("PE_COMMAND_TIMEOUT", "900"))
# PE's client threads each keep a 2 MB write buffer and their own
# connection state: 1g holds 16 of them, not 64 (it ran out of heap).
CLIENT_HEAP = os.environ.get("PE_CLIENT_HEAP")


def client_heap(threads):
    """The PE client JVM's heap for `threads` client threads (PE_CLIENT_HEAP
    overrides it)."""
    return CLIENT_HEAP or ("1g" if threads <= 16 else "3g")

# What PE (or the client under it) logs when something went wrong, though
# PE may still exit 0: log lines at ERROR or FATAL level, any exception or
# error class named, stack frames, and the client's retry complaints.
PROBLEM = re.compile(
    r"(\s(ERROR|FATAL)\s"
    r"|[A-Za-z0-9_$.]+(Exception|Error)\b"
    r"|^\s+at [a-zA-Z0-9_$.]+\("
    r"|^Caused by:"
    r"|neither results nor exceptions"
    r"|[Rr]etries exhausted)",
    re.MULTILINE)
THROUGHPUT = re.compile(r"\[ Avg TPS/QPS\]\s+(\d+)")
LATENCY = re.compile(r"\[ Avg latency \(us\)\]\s+(\d+)")
DURATION = re.compile(r"duration \]\s+Min: (\d+)ms\s+Max: (\d+)ms")

CLIENT_LOG4J = """\
log4j.rootLogger=INFO, console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.target=System.out
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{2}: %m%n
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
"""


def problems(output):
    """The lines of PE's output that show an error it swallowed."""
    return [line for line in output.splitlines() if PROBLEM.search(line)]


def run_pe(cp, conf_dir, quorum, command, options, rows, threads, log_dir):
    args = [f"-Dhbase.zookeeper.quorum={quorum}", "--nomapred", f"--rows={rows}",
            "--valueSize=100", *options, command, str(threads)]
    cmd = hbase_reference.java_command(f"{conf_dir}:{cp}", client_heap(threads), PE_CLASS,
                                       args)
    print(f"+ PerformanceEvaluation {' '.join(args)}", flush=True)
    started = time.monotonic()
    try:
        result = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, timeout=COMMAND_TIMEOUT)
        code, output = result.returncode, result.stdout
    except subprocess.TimeoutExpired as e:
        code = "timeout"
        output = e.stdout if isinstance(e.stdout, str) else (e.stdout or b"").decode(
            errors="replace")
    elapsed = time.monotonic() - started
    with open(os.path.join(log_dir, f"{command}.log"), "w") as f:
        f.write(output)
    found = problems(output)
    tps = THROUGHPUT.search(output)
    latency = LATENCY.search(output)
    duration = DURATION.search(output)
    row = {
        "command": command,
        "exit": code,
        "rows/s": tps.group(1) if tps else "-",
        "mean us": latency.group(1) if latency else "-",
        "slowest client ms": duration.group(2) if duration else "-",
        "wall s": f"{elapsed:.1f}",
        "problems": len(found),
    }
    failed = code != 0 or found or not tps
    if failed:
        print(f"PE: {command} FAILED (exit {code}, {len(found)} problem lines"
              f"{'' if tps else ', no throughput summary'})", flush=True)
        for line in found[:40]:
            print(f"    {line}", flush=True)
        if not found:
            print("".join(output.splitlines(keepends=True)[-60:]), flush=True)
    return row, bool(failed)


def write_client_conf(conf_dir):
    """A log4j.properties for PE's client JVM in `conf_dir` (which goes first
    on its classpath): INFO to stdout, where run_pe reads it."""
    os.makedirs(conf_dir, exist_ok=True)
    with open(os.path.join(conf_dir, "log4j.properties"), "w") as f:
        f.write(CLIENT_LOG4J)
