"""The reference Apache HBase 2.6.4 (hadoop3 build), started standalone from
Maven artifacts alone: master, region server and ZooKeeper in one JVM,
`hbase.rootdir` on the local filesystem, every port a free loopback port,
info servers off, a bounded heap. Used by scripts/pe-suite (`--against
hbase`) and by anything else that wants the real HBase as the peer or the
oracle; scripts/hbase-reference is its command line. docs/reference-hbase.md
describes what it starts and where its logs go.

The classpath comes from compat/hbase/pom.xml through Maven, into the
normal ~/.m2 cache (offline when everything is already there). Nothing here
depends on how fast anything is: the timeouts are hang guards only.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from xml.sax.saxutils import escape

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POM_DIR = os.path.join(ROOT, "compat", "hbase")
JAVA = os.environ.get("JAVA", "java")
# Hang guards: HBase standalone serves in about 30 s on this kind of
# machine; a cold JVM on a loaded 2-core box can take a few times that.
START_TIMEOUT = int(os.environ.get("HBASE_REFERENCE_START_TIMEOUT", "300"))
STOP_TIMEOUT = int(os.environ.get("HBASE_REFERENCE_STOP_TIMEOUT", "60"))
DEFAULT_HEAP = "2g"

# What a JDK 17 JVM needs opened or exported for HBase 2.6's server and
# client (its shaded netty reaches into NIO buffers and the cleaner, and
# its security and DNS helpers into internal classes). The same set HBase's
# own bin/hbase passes on JDK 11+; our own list, in our own words.
JDK17_FLAGS = [
    "-Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true",
    "--add-modules", "jdk.unsupported",
    "--add-opens", "java.base/java.io=ALL-UNNAMED",
    "--add-opens", "java.base/java.nio=ALL-UNNAMED",
    "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens", "java.base/java.lang=ALL-UNNAMED",
    "--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens", "java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens", "java.base/java.util=ALL-UNNAMED",
    "--add-opens", "java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-exports", "java.security.jgss/sun.security.krb5=ALL-UNNAMED",
    "--add-exports", "java.base/sun.net.dns=ALL-UNNAMED",
    "--add-exports", "java.base/sun.net.util=ALL-UNNAMED",
]

# Logging through reload4j (what hbase-server's Maven tree brings: slf4j
# 1.7 with the reload4j binding), so a log4j 1.x properties file.
LOG4J_PROPERTIES = """\
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File={log}
log4j.appender.file.Append=true
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=%d{{ISO8601}} %-5p [%t] %c{{2}}: %m%n
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.org.apache.hadoop.metrics2=WARN
log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
"""

# A client-side check that the master is initialized (hbase:meta online,
# namespaces ready): listTableNames goes to the master, which refuses with
# PleaseHoldException until then; the client retries for us.
READY_CHECK = """\
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;

public class ReadyCheck {
  public static void main(String[] args) throws Exception {
    Configuration conf = HBaseConfiguration.create();
    conf.set("hbase.zookeeper.quorum", args[0]);
    // A Kerberos HBase refuses an unauthenticated client: log in from the
    // keytab given (args 1 and 2) first.
    if (args.length == 3) {
      org.apache.hadoop.security.UserGroupInformation.setConfiguration(conf);
      org.apache.hadoop.security.UserGroupInformation.loginUserFromKeytab(args[1], args[2]);
    }
    try (Connection connection = ConnectionFactory.createConnection(conf);
        Admin admin = connection.getAdmin()) {
      System.out.println("tables: " + admin.listTableNames().length);
      System.out.println("region servers: "
          + admin.getClusterMetrics().getLiveServerMetrics().size());
    }
  }
}
"""


# Below the ephemeral range: scripts/ports.py says why.
from ports import free_port  # noqa: E402,F401  (re-exported to the suites)


def classpath(quiet=True):
    """HBase 2.6.4's classpath (hbase-server + hbase-zookeeper hadoop3,
    hbase-server's test jar, hbase-mapreduce 2.6.4 and its test jar), from
    Maven: offline first, online only when something is missing."""
    return maven_classpath(POM_DIR, quiet=quiet)


def maven_classpath(pom_dir, goals=(), quiet=True, who="hbase-reference"):
    """The dependency classpath of the Maven project in `pom_dir`, after
    running `goals` (e.g. "compile") on it: offline first, online only when
    something is missing from ~/.m2."""
    out = tempfile.NamedTemporaryFile(prefix="maven-classpath-", suffix=".txt", delete=False)
    out.close()
    name = os.path.relpath(pom_dir, ROOT)
    try:
        base = ["mvn", "-B", "-q", *goals, "dependency:build-classpath",
                f"-Dmdep.outputFile={out.name}"]
        for offline in (True, False):
            cmd = base[:1] + (["-o"] if offline else []) + base[1:]
            result = subprocess.run(cmd, cwd=pom_dir, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True)
            if result.returncode == 0:
                break
            if not offline:
                print(result.stdout, flush=True)
                sys.exit(f"{who}: Maven could not build or resolve {name}")
            if not quiet:
                print(f"{who}: not everything {name} needs is in ~/.m2 yet; "
                      "resolving online", flush=True)
        with open(out.name) as f:
            cp = f.read().strip()
    finally:
        os.unlink(out.name)
    if not cp:
        sys.exit(f"{who}: Maven gave an empty classpath for {name}")
    return cp


def java_command(cp, heap, main_class, args=(), extra_jvm=()):
    """A java command line for `main_class` on HBase's classpath with the
    JDK 17 flags, the heap bound and any extra JVM options."""
    return [JAVA, f"-Xmx{heap}", *JDK17_FLAGS, *extra_jvm, "-cp", cp, main_class, *args]


# HBase's AccessController on master, region servers and regions, as
# HBase's security guide configures it, with `admin` and the group `ops`
# as superusers and Hadoop's static group mapping for the test users:
# the same setup scripts/java-suite gives Basalt (`[security]`), so the
# access control tests can ask the real HBase what it does.
ACCESS_CONTROL_SITE = {
    "hbase.security.authorization": "true",
    "hbase.coprocessor.master.classes":
        "org.apache.hadoop.hbase.security.access.AccessController",
    "hbase.coprocessor.region.classes":
        "org.apache.hadoop.hbase.security.access.AccessController",
    "hbase.coprocessor.regionserver.classes":
        "org.apache.hadoop.hbase.security.access.AccessController",
    "hbase.superuser": "admin,@ops",
    "hadoop.user.group.static.mapping.overrides": "carol=devs;erin=ops",
}


def kerberos_site(realm, keytab, protection="authentication", superusers="hbaseadmin"):
    """Kerberos on the reference HBase, as HBase's security guide sets it
    up, with its AccessController (ACCESS_CONTROL_SITE's coprocessors):
    master and region server log in as hbase/_HOST@`realm` from `keytab`,
    _HOST being `localhost` (the name the servers advertise, and what
    127.0.0.1 reverse-resolves to, so clients expect that principal);
    `protection` is hbase.rpc.protection (authentication, integrity,
    privacy). Its ZooKeeper stays unauthenticated (no JAAS "Client"
    section; run the JVM with -Dzookeeper.sasl.client=false).

    hadoop.security.authorization is on: without it HBase's RPC server
    skips its connection authorization, proxy users included, so any
    Kerberos user could name any other as the connection header's
    effective user and act as it (HBase 2.6.4's ServerRpcConnection calls
    ProxyUsers.authorize only when RpcServer.needAuthorization())."""
    principal = f"hbase/_HOST@{realm}"
    return {
        "hbase.security.authentication": "kerberos",
        "hadoop.security.authentication": "kerberos",
        "hbase.security.authorization": "true",
        "hadoop.security.authorization": "true",
        "hbase.coprocessor.master.classes":
            "org.apache.hadoop.hbase.security.access.AccessController",
        "hbase.coprocessor.region.classes":
            "org.apache.hadoop.hbase.security.access.AccessController",
        "hbase.coprocessor.regionserver.classes":
            "org.apache.hadoop.hbase.security.access.AccessController",
        "hbase.superuser": superusers,
        "hbase.master.kerberos.principal": principal,
        "hbase.master.keytab.file": keytab,
        "hbase.regionserver.kerberos.principal": principal,
        "hbase.regionserver.keytab.file": keytab,
        "hbase.rpc.protection": protection,
        "hbase.master.hostname": "localhost",
        "hbase.unsafe.regionserver.hostname": "localhost",
    }


# Compaction threads for the differential test. HBase runs a region's
# compactions one store at a time on each pool's threads (one small, one
# large by default), and a store whose compaction is still queued reports
# no compaction at all: a client waiting for a major compaction could see
# one family done and the next not started. With a thread for every store
# of the driver's tables (4 families x at most 4 regions) a requested
# compaction starts at once, so the driver's wait (Differential.majorCompact)
# sees it running or done. Benchmarks keep HBase's defaults.
DIFFERENTIAL_SITE = {
    "hbase.regionserver.thread.compaction.small": "16",
    "hbase.regionserver.thread.compaction.large": "4",
}


def _site_xml(props):
    body = "".join(
        f"  <property><name>{escape(k)}</name><value>{escape(str(v))}</value></property>\n"
        for k, v in props.items())
    return f'<?xml version="1.0"?>\n<configuration>\n{body}</configuration>\n'


class ReferenceHBase:
    """HBase 2.6.4 standalone (`HMaster start` with `hbase.cluster.distributed`
    false) in a temporary directory. Use as a context manager, or call
    start()/stop(). `quorum` is the ZooKeeper connect string clients take
    (`hbase.zookeeper.quorum`); `dir` holds conf/, data/ and logs/.
    """

    def __init__(self, heap=None, keep=False, cp=None, base_dir=None, extra_site=None,
                 extra_jvm=(), ready_login=None):
        self.heap = heap or os.environ.get("HBASE_REFERENCE_HEAP", DEFAULT_HEAP)
        # More hbase-site.xml properties (access control, for one), over
        # the standalone ones.
        self.extra_site = dict(extra_site or {})
        # More JVM options for the server and the ready check (Kerberos:
        # -Djava.security.krb5.conf), and the (principal, keytab) the
        # ready check logs in with when HBase requires Kerberos.
        self.extra_jvm = list(extra_jvm)
        self.ready_login = ready_login
        self.keep = keep
        self.cp = cp
        self.dir = base_dir or tempfile.mkdtemp(prefix="hbase-reference-")
        self.conf_dir = os.path.join(self.dir, "conf")
        self.log_dir = os.path.join(self.dir, "logs")
        self.log_path = os.path.join(self.log_dir, "hbase.log")
        self.out_path = os.path.join(self.log_dir, "hbase.out")
        self.zk_port = free_port()
        self.master_port = free_port()
        self.regionserver_port = free_port()
        self.quorum = f"127.0.0.1:{self.zk_port}"
        self.process = None
        self.started = None

    def site(self):
        data = os.path.join(self.dir, "data")
        return {
            "hbase.cluster.distributed": "false",
            "hbase.rootdir": f"file://{data}/hbase",
            "hbase.tmp.dir": f"{data}/tmp",
            "hbase.zookeeper.property.dataDir": f"{data}/zookeeper",
            # The local filesystem has no hflush/hsync: HBase refuses to
            # write its WAL there unless told not to check (so standalone
            # HBase does not fsync its WAL; benchmarks must say so).
            "hbase.unsafe.stream.capability.enforce": "false",
            "hbase.zookeeper.quorum": "127.0.0.1",
            "hbase.zookeeper.property.clientPort": self.zk_port,
            "hbase.zookeeper.property.clientPortAddress": "127.0.0.1",
            "hbase.master.port": self.master_port,
            "hbase.regionserver.port": self.regionserver_port,
            "hbase.master.ipc.address": "127.0.0.1",
            "hbase.regionserver.ipc.address": "127.0.0.1",
            "hbase.unsafe.regionserver.hostname": "127.0.0.1",
            "hbase.master.hostname": "127.0.0.1",
            "hbase.master.info.port": "-1",
            "hbase.regionserver.info.port": "-1",
            # The in-process ZooKeeper's own admin HTTP server (port 8080
            # by default) stays off.
            "zookeeper.admin.enableServer": "false",
            **self.extra_site,
        }

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.stop(failed=exc_type is not None)
        return False

    def start(self):
        os.makedirs(self.conf_dir, exist_ok=True)
        os.makedirs(self.log_dir, exist_ok=True)
        with open(os.path.join(self.conf_dir, "hbase-site.xml"), "w") as f:
            f.write(_site_xml(self.site()))
        # Hadoop reads its own settings (the group mapping among them)
        # from core-site.xml, not hbase-site.xml.
        hadoop = {k: v for k, v in self.site().items() if k.startswith("hadoop.")}
        with open(os.path.join(self.conf_dir, "core-site.xml"), "w") as f:
            f.write(_site_xml(hadoop))
        with open(os.path.join(self.conf_dir, "log4j.properties"), "w") as f:
            f.write(LOG4J_PROPERTIES.format(log=self.log_path))
        if self.cp is None:
            self.cp = classpath(quiet=False)
        cp = f"{self.conf_dir}:{self.cp}"
        cmd = java_command(
            cp, self.heap, "org.apache.hadoop.hbase.master.HMaster", ["start"],
            ["-Dzookeeper.admin.enableServer=false", "-Djava.net.preferIPv4Stack=true",
             f"-Dhbase.log.dir={self.log_dir}", "-Dhbase.log.file=hbase.log",
             *self.extra_jvm])
        print(f"hbase-reference: starting HBase 2.6.4 standalone in {self.dir} "
              f"(heap {self.heap}, ZooKeeper 127.0.0.1:{self.zk_port}, master "
              f"{self.master_port}, region server {self.regionserver_port})", flush=True)
        self.started = time.monotonic()
        self.out = open(self.out_path, "w")
        self.process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.out,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self._wait_ready()
        except BaseException:
            self.stop(failed=True)
            raise
        print(f"hbase-reference: HBase answers after {time.monotonic() - self.started:.1f} s; "
              f"quorum {self.quorum}", flush=True)

    def _wait_ready(self):
        deadline = time.monotonic() + START_TIMEOUT
        # The ZooKeeper port first (cheap), then a real client call.
        while True:
            self._check_alive()
            try:
                with socket.create_connection(("127.0.0.1", self.zk_port), timeout=1):
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("hbase-reference: ZooKeeper never listened")
            time.sleep(0.5)
        check = os.path.join(self.conf_dir, "ReadyCheck.java")
        with open(check, "w") as f:
            f.write(READY_CHECK)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RuntimeError(f"hbase-reference: HBase did not answer within "
                                   f"{START_TIMEOUT} s; log in {self.log_path}")
            # Java 11+ runs a single source file directly.
            cmd = java_command(f"{self.conf_dir}:{self.cp}", "256m", check,
                               [self.quorum, *(self.ready_login or ())],
                               ["-Dhbase.client.retries.number=3", *self.extra_jvm])
            try:
                result = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True,
                                        timeout=remaining)
            except subprocess.TimeoutExpired:
                continue
            if result.returncode == 0 and "region servers: 1" in result.stdout:
                return
            self._check_alive()
            time.sleep(1)

    def _check_alive(self):
        if self.process.poll() is not None:
            self.print_log()
            raise RuntimeError(f"hbase-reference: HBase exited early with "
                               f"{self.process.returncode}")

    def print_log(self, tail=200):
        for path in (self.out_path, self.log_path):
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    lines = f.readlines()
                print(f"---- {path} (last {tail} lines)\n{''.join(lines[-tail:])}", flush=True)

    def rss_kib(self):
        """The server JVM's resident set size now, in KiB (None when gone)."""
        try:
            with open(f"/proc/{self.process.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            return None
        return None

    def stop(self, failed=False):
        """SIGTERM (HMaster's shutdown hook stops the region server and
        ZooKeeper), then SIGKILL to the process group after the guard."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                print("hbase-reference: HBase did not stop after SIGTERM; killing it", flush=True)
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.out.close()
        if failed:
            self.print_log()
        if self.keep or failed:
            print(f"hbase-reference: logs kept in {self.log_dir}", flush=True)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)
        self.process = None
