"""What the client-suite scripts share: finding the `basalt` binary that
`cargo test` built, a private virtualenv, free ports, and a `basalt serve`
started on a temporary data directory and stopped with SIGTERM.

Used by scripts/happybase-suite, scripts/hbase-rest-py-suite,
scripts/thrift2-client-suite and scripts/tls-clients. Nothing here depends on how fast anything
is: the timeouts are hang guards only.
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
START_TIMEOUT = 60
STOP_TIMEOUT = 60


def run(cmd, **kwargs):
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kwargs)


def cargo_features():
    """The features scripts/test builds with (scripts/cargo-features), so
    asking cargo for the binary reuses that build instead of making
    another."""
    with open(os.path.join(ROOT, "scripts", "cargo-features")) as f:
        features = f.read().split()
    return ["--features", ",".join(features)] if features else []


def basalt_binary(suite):
    """The `basalt` binary `cargo test --workspace` builds (its test profile).

    Asks cargo itself, so CARGO_TARGET_DIR and the profile's directory are
    whatever cargo uses. After scripts/test's build step this compiles
    nothing; run on its own, it builds what `cargo test` would.
    """
    cmd = ["cargo", "test", "--workspace", "--locked", "--no-run",
           "--message-format=json-render-diagnostics"] + cargo_features()
    print("+", " ".join(cmd), flush=True)
    out = subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True)
    for line in out.stdout.splitlines():
        message = json.loads(line)
        target = message.get("target", {})
        # `cargo test` also builds the bin's own unit tests as an executable
        # named basalt: the server is the one not built as a test.
        if (message.get("reason") == "compiler-artifact"
                and target.get("name") == "basalt" and "bin" in target.get("kind", [])
                and not message.get("profile", {}).get("test", True)):
            return message["executable"]
    sys.exit(f"{suite}: `cargo test --no-run` built no basalt binary")


def venv_python(name, packages):
    """A virtualenv under target/ with `packages` installed, reused while
    the package list is the same (the marker file names it)."""
    venv = os.path.join(ROOT, "target", name)
    python = os.path.join(venv, "bin", "python")
    marker = os.path.join(venv, ".ready")
    wanted = "\n".join(packages)
    if not os.path.exists(marker) or open(marker).read() != wanted:
        shutil.rmtree(venv, ignore_errors=True)
        run([sys.executable, "-m", "venv", venv])
        run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             *packages])
        with open(marker, "w") as f:
            f.write(wanted)
    return python


# Below the ephemeral range: scripts/ports.py says why.
from ports import free_port  # noqa: E402,F401  (re-exported to the suites)


class Server:
    """`basalt serve` on free ports and a temporary data directory.

    `ports` maps a serve flag (`--thrift-port`) to the port to pass; every
    gateway not named gets port 0 (a free port nobody waits on), so runs
    never collide with each other or with anything on HBase's default
    ports. Use as a context manager: the server is stopped with SIGTERM on
    exit and must exit 0 (a clean close syncs the log); its log is printed
    when anything fails.
    """

    GATEWAY_FLAGS = ("--thrift-port", "--thrift2-port", "--rest-port")

    def __init__(self, suite, binary, ports, extra_args=(), env=None):
        self.suite = suite
        self.binary = binary
        self.ports = dict(ports)
        self.extra_args = list(extra_args)
        # More environment variables for the server (Kerberos: KRB5_CONFIG,
        # KRB5RCACHEDIR), over this process's.
        self.env = dict(env or {})
        self.data = tempfile.mkdtemp(prefix=f"basalt-{suite}-")
        self.log_path = os.path.join(self.data, "server.log")
        self.process = None
        self.log_printed = False

    def __enter__(self):
        args = [self.binary, "serve", "--data-dir", os.path.join(self.data, "db")]
        for flag in self.GATEWAY_FLAGS:
            args += [flag, str(self.ports.get(flag, 0))]
        for flag, port in self.ports.items():
            if flag not in self.GATEWAY_FLAGS:
                args += [flag, str(port)]
        args += self.extra_args
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
            env={**os.environ, **self.env} if self.env else None)
        for port in self.ports.values():
            self._wait_for_port(port)
        return self

    def _wait_for_port(self, port):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.print_log()
                sys.exit(f"{self.suite}: server exited early with {self.process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        self.print_log()
        sys.exit(f"{self.suite}: server did not start listening on port {port}")

    def print_log(self):
        """The server's log so far (once: a failure inside the `with` block
        prints it, and the exit then does not print it again)."""
        if self.log_printed:
            return
        self.log_printed = True
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path) as f:
            print(f.read(), flush=True)

    def __exit__(self, exc_type, exc, tb):
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            code = "killed"
        self.log.close()
        if exc_type is not None:
            self.print_log()
            return False
        if code != 0:
            self.print_log()
            sys.exit(f"{self.suite}: server exited with {code} after SIGTERM")
        shutil.rmtree(self.data, ignore_errors=True)
        return False


class LocalCluster:
    """`basalt local-cluster` on free ports in a temporary directory: a
    master and `servers` region servers on the ZooKeeper at `quorum`, data
    in a shared directory. `region_servers` lists each server's ports
    (`thrift`, `thrift2`, `rest`, `rpc`) as the command printed them. The
    cluster is stopped with SIGTERM on exit (which stops every process
    cleanly) and its logs are printed when anything fails.
    """

    LINE = re.compile(
        r"^\s+regionserver\d+\s+thrift 127\.0\.0\.1:(\d+)\s+thrift2 127\.0\.0\.1:(\d+)"
        r"\s+rest 127\.0\.0\.1:(\d+)\s+native RPC 127\.0\.0\.1:(\d+)")

    def __init__(self, suite, binary, quorum, servers=3, extra_args=()):
        self.suite = suite
        self.binary = binary
        self.quorum = quorum
        self.servers = servers
        self.extra_args = list(extra_args)
        self.dir = tempfile.mkdtemp(prefix=f"basalt-{suite}-cluster-")
        self.region_servers = []
        self.failed = False

    def __enter__(self):
        args = [self.binary, "local-cluster", "--dir", self.dir, "--zookeeper", self.quorum,
                "--region-servers", str(self.servers), "--master-port", "0",
                "--thrift-port", "0", "--thrift2-port", "0", "--rest-port", "0",
                "--region-server-port", "0", "--info-port", "0",
                "--region-server-info-port", "0", *self.extra_args]
        self.out_path = os.path.join(self.dir, "local-cluster.out")
        self.out = open(self.out_path, "w")
        self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=self.out, text=True)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            print(f"[local-cluster] {line.rstrip()}", flush=True)
            match = self.LINE.match(line)
            if match:
                thrift, thrift2, rest, rpc = (int(p) for p in match.groups())
                self.region_servers.append(
                    {"thrift": thrift, "thrift2": thrift2, "rest": rest, "rpc": rpc})
            if line.startswith("Logs in"):
                return self
        self.print_logs()
        self.process.kill()
        sys.exit(f"{self.suite}: the local cluster did not come up")

    def print_logs(self):
        logs = os.path.join(self.dir, "logs")
        for name in sorted(os.listdir(logs)) if os.path.isdir(logs) else []:
            with open(os.path.join(logs, name), errors="replace") as f:
                print(f"---- {name}\n{f.read()}", flush=True)

    def __exit__(self, exc_type, exc, tb):
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            code = "killed"
        self.out.close()
        if exc_type is not None or code != 0 or self.failed:
            self.print_logs()
            if exc_type is None:
                sys.exit(f"{self.suite}: the local cluster exited with {code} after SIGTERM")
            return False
        shutil.rmtree(self.dir, ignore_errors=True)
        return False


ZOOKEEPER_JAR = "/usr/share/java/zookeeper.jar"


class ZooKeeper:
    """The real ZooKeeper (Debian's `zookeeper` package, which scripts/test
    installs) on a free loopback port with a temporary data directory;
    killed on exit. `connect_string` is what clients and `basalt serve
    --zookeeper` take."""

    def __init__(self, suite):
        self.suite = suite
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix=f"zookeeper-{suite}-")
        self.connect_string = f"127.0.0.1:{self.port}"
        self.process = None

    def __enter__(self):
        if not os.path.exists(ZOOKEEPER_JAR):
            sys.exit(f"{self.suite}: {ZOOKEEPER_JAR} is missing: install Debian's "
                     "zookeeper package (scripts/test does)")
        cfg = os.path.join(self.dir, "zoo.cfg")
        with open(cfg, "w") as f:
            f.write(f"tickTime=500\ndataDir={self.dir}/data\nclientPort={self.port}\n"
                    "clientPortAddress=127.0.0.1\nadmin.enableServer=false\n"
                    "4lw.commands.whitelist=ruok\nmaxSessionTimeout=60000\n"
                    # Clients that open a session per call (hbase-driver
                    # does) pass ZooKeeper's default of 60 per address.
                    "maxClientCnxns=0\n")
        self.log = open(os.path.join(self.dir, "zookeeper.log"), "w")
        # The jar's manifest names its dependencies' paths in /usr/share/java.
        self.process = subprocess.Popen(
            ["java", "-cp", f"/etc/zookeeper/conf:{ZOOKEEPER_JAR}",
             "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                sys.exit(f"{self.suite}: zookeeper exited with {self.process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall(b"ruok")
                    if s.recv(4) == b"imok":
                        return self
            except OSError:
                pass
            time.sleep(0.2)
        sys.exit(f"{self.suite}: zookeeper did not start on port {self.port}")

    def __exit__(self, exc_type, exc, tb):
        self.process.kill()
        self.process.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        return False
