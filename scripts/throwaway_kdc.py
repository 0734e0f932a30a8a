#!/usr/bin/env python3
"""A throwaway MIT Kerberos KDC on loopback, for tests: one realm, a
database, a krb5.conf and a kdc.conf, all in one directory, and `krb5kdc`
listening on a free TCP port of 127.0.0.1 (no UDP). Every test that needs
Kerberos uses this one implementation: Python scripts import it, anything
else (Rust tests) runs it as a command.

Module:

    with ThrowawayKdc(directory) as kdc:          # start() ... stop()
        keytab = kdc.add_principal("alice")       # -> <dir>/alice.keytab
        env = {**os.environ, **kdc.env()}         # KRB5_CONFIG, KRB5CCNAME...
        java = kdc.java_options()                 # -Djava.security.krb5.conf=...

Command line (state kept in DIR: kdc.json, the pid file):

    throwaway_kdc.py start DIR [--realm R] [--principal P ...] [--watch-pid PID]
        starts the KDC detached and prints one JSON object: realm, port,
        krb5_conf, kdc_conf, env, java_options, keytabs {name: path},
        principals {name: full principal}, pid. With --watch-pid the KDC is
        stopped when that process is gone (a test that dies leaves nothing).
    throwaway_kdc.py add DIR PRINCIPAL    prints the new keytab's path
    throwaway_kdc.py stop DIR             stops the KDC (and its watcher)
    throwaway_kdc.py self-test            start, add alice, kinit, kvno, stop

What it needs: Debian's krb5-kdc (krb5kdc, kdb5_util), krb5-admin-server
(kadmin.local) and, for the self-test, krb5-user (kinit, kvno). Python 3
standard library only. Tickets last 10 minutes (max 1 hour): long enough
for any test, short enough that nothing outlives a run. Timeouts are hang
guards only.
"""

import argparse
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

DEFAULT_REALM = "BASALT.TEST"


def _admin_path():
    """PATH with /usr/sbin and /sbin, where Debian puts krb5kdc,
    kdb5_util and kadmin.local (not on every user's PATH)."""
    parts = os.environ.get("PATH", "").split(os.pathsep)
    return os.pathsep.join(parts + [d for d in ("/usr/sbin", "/sbin") if d not in parts])
START_TIMEOUT = 30
STOP_TIMEOUT = 10
STATE = "kdc.json"
PID_FILE = "kdc.pid"

KRB5_CONF = """\
[libdefaults]
  default_realm = {realm}
  dns_lookup_kdc = false
  dns_lookup_realm = false
  rdns = false
  dns_canonicalize_hostname = false
  udp_preference_limit = 1
  ticket_lifetime = 10m
  renew_lifetime = 1h
  forwardable = true
  default_ccache_name = FILE:{dir}/ccache

[realms]
  {realm} = {{
    kdc = 127.0.0.1:{port}
  }}

[domain_realm]
  localhost = {realm}
  .localhost = {realm}
"""

# kdc_listen = "" : no UDP socket at all (the clients use TCP only, and an
# unset kdc_listen would mean UDP port 88 on every address).
KDC_CONF = """\
[kdcdefaults]
  kdc_listen = ""
  kdc_tcp_listen = 127.0.0.1:{port}

[realms]
  {realm} = {{
    database_name = {dir}/principal
    key_stash_file = {dir}/stash
    acl_file = {dir}/kadm5.acl
    max_life = 1h
    max_renewable_life = 1h
    supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
  }}

[logging]
  kdc = FILE:{dir}/kdc.log
"""


# Below the ephemeral range: scripts/ports.py says why.
from ports import free_port as _free_port  # noqa: E402


def _die_with_parent():
    """In the child before exec: SIGKILL when the process that started it
    dies (Linux prctl PR_SET_PDEATHSIG), so a crashed test leaves no KDC."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return None


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def keytab_name(principal):
    """The keytab file name for a principal: `/` and `@` become `_`."""
    return principal.replace("/", "_").replace("@", "_") + ".keytab"


class ThrowawayKdc:
    """An MIT KDC for one realm in `directory` (created if missing). Use
    as a context manager, or start() and stop(). Started by this object
    (the module API), the KDC is killed when this process dies;
    `detached=True` (the command line's `start`) lets it outlive it."""

    def __init__(self, directory, realm=DEFAULT_REALM, detached=False):
        self.dir = os.path.abspath(directory)
        self.realm = realm
        self.detached = detached
        self.port = None
        self.pid = None
        self.process = None
        self.krb5_conf = os.path.join(self.dir, "krb5.conf")
        self.kdc_conf = os.path.join(self.dir, "kdc.conf")
        self.keytabs = {}

    # -- environment ------------------------------------------------------

    def env(self):
        """What MIT krb5 programs (kinit, a GSS-API server or client) need
        to use this realm: merge it over os.environ."""
        rcache = os.path.join(self.dir, "rcache")
        os.makedirs(rcache, exist_ok=True)
        return {
            "KRB5_CONFIG": self.krb5_conf,
            "KRB5_KDC_PROFILE": self.kdc_conf,
            "KRB5RCACHEDIR": rcache,
            "KRB5CCNAME": f"FILE:{os.path.join(self.dir, 'ccache')}",
        }

    def java_options(self):
        """JVM options for a Java client or server of this realm. Java
        ignores KRB5_CONFIG; referrals (a TGS request with the canonicalize
        flag, retried on other realms) are pointless with one realm."""
        return [f"-Djava.security.krb5.conf={self.krb5_conf}",
                "-Dsun.security.krb5.disableReferrals=true"]

    def principal(self, name):
        """`name` with this realm appended unless it names one."""
        return name if "@" in name else f"{name}@{self.realm}"

    # -- life cycle -------------------------------------------------------

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.stop()
        return False

    def _run(self, cmd, **kwargs):
        env = {**os.environ, **self.env(), "PATH": _admin_path()}
        result = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, timeout=START_TIMEOUT,
                                **kwargs)
        if result.returncode != 0:
            raise RuntimeError(f"throwaway-kdc: {' '.join(cmd)} failed "
                               f"({result.returncode}): {result.stdout.strip()}")
        return result.stdout

    def _kadmin(self, query):
        return self._run(["kadmin.local", "-r", self.realm, "-q", query])

    def start(self):
        """Writes the configuration, creates the database and starts the
        KDC on a free port; returns once it answers."""
        for tool in ("krb5kdc", "kdb5_util", "kadmin.local"):
            if shutil.which(tool) is None and not os.path.exists(f"/usr/sbin/{tool}"):
                raise RuntimeError(f"throwaway-kdc: {tool} is missing: install Debian's "
                                   "krb5-kdc and krb5-admin-server")
        os.makedirs(self.dir, exist_ok=True)
        if os.path.exists(os.path.join(self.dir, "principal")):
            raise RuntimeError(f"throwaway-kdc: {self.dir} already holds a KDC database")
        # A port free a moment ago may be taken before krb5kdc binds it:
        # try another.
        last = None
        for _attempt in range(5):
            self.port = _free_port()
            self._write_config()
            if not os.path.exists(os.path.join(self.dir, "principal")):
                # -W: the weak (fast) random source: the master key of a
                # throwaway database needs no strength.
                self._run(["kdb5_util", "create", "-s", "-r", self.realm, "-W",
                           "-P", os.urandom(12).hex()])
            try:
                self._launch()
                break
            except RuntimeError as e:
                last = e
        else:
            raise last
        self._save_state()
        return self

    def _write_config(self):
        values = {"realm": self.realm, "port": self.port, "dir": self.dir}
        with open(self.krb5_conf, "w") as f:
            f.write(KRB5_CONF.format(**values))
        with open(self.kdc_conf, "w") as f:
            f.write(KDC_CONF.format(**values))
        with open(os.path.join(self.dir, "kadm5.acl"), "w") as f:
            f.write("")

    def _launch(self):
        env = {**os.environ, **self.env(), "PATH": _admin_path()}
        pid_file = os.path.join(self.dir, PID_FILE)
        log = open(os.path.join(self.dir, "krb5kdc.out"), "ab")
        # Its own process group (stop() kills the group); -n keeps it in
        # the foreground, so its pid is the Popen's.
        self.process = subprocess.Popen(
            ["krb5kdc", "-n", "-P", pid_file], env=env, stdin=subprocess.DEVNULL,
            stdout=log, stderr=log, start_new_session=True,
            preexec_fn=None if self.detached else _die_with_parent)
        log.close()
        self.pid = self.process.pid
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"throwaway-kdc: krb5kdc exited with "
                                   f"{self.process.returncode}: {self._log_tail()}")
            if self._answers():
                return
            time.sleep(0.05)
        self._kill()
        raise RuntimeError(f"throwaway-kdc: krb5kdc did not answer on port {self.port}")

    def _answers(self):
        """True once the KDC's TCP port accepts connections: krb5kdc
        listens only after it has opened its database."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False

    def _log_tail(self):
        parts = []
        for name in ("krb5kdc.out", "kdc.log"):
            try:
                with open(os.path.join(self.dir, name), errors="replace") as f:
                    parts.append(f.read()[-2000:])
            except OSError:
                pass
        return "\n".join(parts)

    def _save_state(self, **extra):
        state = {"realm": self.realm, "port": self.port, "pid": self.pid,
                 "keytabs": self.keytabs}
        path = os.path.join(self.dir, STATE)
        try:
            with open(path) as f:
                old = json.load(f)
        except (OSError, ValueError):
            old = {}
        if old.get("pid") == self.pid and "watcher" in old:
            state["watcher"] = old["watcher"]
        state.update(extra)
        with open(path + ".tmp", "w") as f:
            json.dump(state, f)
        os.replace(path + ".tmp", path)

    @classmethod
    def attach(cls, directory):
        """The KDC a `start` left running in `directory`."""
        directory = os.path.abspath(directory)
        with open(os.path.join(directory, STATE)) as f:
            state = json.load(f)
        kdc = cls(directory, state["realm"], detached=True)
        kdc.port = state["port"]
        kdc.pid = state["pid"]
        kdc.keytabs = state.get("keytabs", {})
        kdc.watcher = state.get("watcher")
        return kdc

    def _is_ours(self, pid):
        """Whether `pid` is still this directory's krb5kdc (a pid can be
        reused once the process is gone)."""
        cmd = _cmdline(pid)
        return bool(cmd) and os.path.basename(cmd[0]) == b"krb5kdc" and \
            os.path.join(self.dir, PID_FILE).encode() in cmd

    def _kill(self):
        if self.pid is None:
            return
        if self.process is not None:
            alive = self.process.poll() is None
        else:
            alive = _alive(self.pid) and self._is_ours(self.pid)
        if alive:
            # The KDC leads its own group: the whole group goes.
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(self.pid, sig)
                except ProcessLookupError:
                    break
                deadline = time.monotonic() + STOP_TIMEOUT
                while time.monotonic() < deadline:
                    if self.process is not None:
                        if self.process.poll() is not None:
                            break
                    elif not _alive(self.pid):
                        break
                    time.sleep(0.05)
                else:
                    continue
                break
        if self.process is not None:
            self.process.wait()

    def stop(self):
        """Stops the KDC (and a --watch-pid watcher); the directory stays."""
        self._kill()
        watcher = getattr(self, "watcher", None)
        if watcher and watcher != os.getpid() and _alive(watcher):
            cmd = _cmdline(watcher) or []
            if any(b"throwaway_kdc" in part for part in cmd):
                try:
                    os.kill(watcher, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        self.pid = None
        self.process = None
        try:
            os.unlink(os.path.join(self.dir, PID_FILE))
        except FileNotFoundError:
            pass

    # -- principals -------------------------------------------------------

    def add_principal(self, name, keytab=None):
        """Creates `name` (this realm unless it names one) with a random key
        and exports it to <dir>/<name, / and @ as _>.keytab (mode 0600);
        returns that path. Calling it again for the same name exports the
        same key again (no new kvno), so every keytab stays valid. With
        `keytab`, the key is added to that keytab instead (one keytab for
        several principals, as a server's often is)."""
        full = self.principal(name)
        try:
            self._kadmin(f"addprinc -randkey {full}")
        except RuntimeError as e:
            if "already exists" not in str(e):
                raise
        if keytab is not None:
            path = os.path.abspath(keytab)
        else:
            path = os.path.join(self.dir, keytab_name(name))
            if os.path.exists(path):
                os.unlink(path)
        # -norandkey: export the key as it is (a plain ktadd re-randomises
        # it, which would invalidate keytabs exported before).
        out = self._kadmin(f"ktadd -norandkey -k {path} {full}")
        if not os.path.exists(path):
            raise RuntimeError(f"throwaway-kdc: ktadd wrote no keytab for {full}: {out}")
        os.chmod(path, 0o600)
        if keytab is None:
            self.keytabs[name] = path
        if os.path.exists(os.path.join(self.dir, STATE)):
            self._save_state()
        return path

    def describe(self):
        """What the command line's `start` prints."""
        return {
            "realm": self.realm,
            "port": self.port,
            "krb5_conf": self.krb5_conf,
            "kdc_conf": self.kdc_conf,
            "env": self.env(),
            "java_options": self.java_options(),
            "keytabs": dict(self.keytabs),
            "principals": {name: self.principal(name) for name in self.keytabs},
            "pid": self.pid,
        }


# -- command line ---------------------------------------------------------

def _watch(directory, pid):
    """The --watch-pid watcher: stops the KDC once `pid` is gone, and
    leaves once the KDC is."""
    kdc = ThrowawayKdc.attach(directory)
    kdc.watcher = None
    while True:
        if not (_alive(kdc.pid) and kdc._is_ours(kdc.pid)):
            return
        if not _alive(pid):
            kdc.stop()
            return
        time.sleep(0.5)


def _cmd_start(opts):
    kdc = ThrowawayKdc(opts.dir, opts.realm, detached=True)
    kdc.start()
    try:
        for name in opts.principal or []:
            kdc.add_principal(name)
        if opts.watch_pid:
            watcher = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "_watch", kdc.dir,
                 str(opts.watch_pid)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True)
            kdc._save_state(watcher=watcher.pid)
    except BaseException:
        kdc.stop()
        raise
    # Popen's object would reap the child at exit otherwise: the detached
    # KDC is the caller's now.
    kdc.process = None
    print(json.dumps(kdc.describe()), flush=True)


def _cmd_self_test(_opts):
    """Start, add alice and a service principal, kinit alice from her
    keytab, get a service ticket, stop, and check nothing is left."""
    directory = tempfile.mkdtemp(prefix="throwaway-kdc-")
    try:
        with ThrowawayKdc(directory) as kdc:
            alice = kdc.add_principal("alice")
            kdc.add_principal("hbase/localhost")
            mode = os.stat(alice).st_mode & 0o777
            assert mode == 0o600, oct(mode)
            env = {**os.environ, **kdc.env()}
            for cmd in (["kinit", "-kt", alice, kdc.principal("alice")],
                        ["kvno", kdc.principal("hbase/localhost")], ["klist"]):
                print("+", " ".join(cmd), flush=True)
                subprocess.run(cmd, env=env, check=True, timeout=START_TIMEOUT)
            pid = kdc.pid
        assert not _alive(pid), f"krb5kdc {pid} outlived stop()"
        # The command line: start detached, add, stop.
        cli = [sys.executable, os.path.abspath(__file__)]
        second = os.path.join(directory, "cli")
        out = subprocess.run(cli + ["start", second, "--principal", "bob",
                                    "--watch-pid", str(os.getpid())],
                             check=True, stdout=subprocess.PIPE, text=True).stdout
        info = json.loads(out)
        print(json.dumps(info, indent=2), flush=True)
        assert _alive(info["pid"])
        path = subprocess.run(cli + ["add", second, "HTTP/localhost"], check=True,
                              stdout=subprocess.PIPE, text=True).stdout.strip()
        assert os.path.exists(path), path
        env = {**os.environ, **info["env"]}
        subprocess.run(["kinit", "-kt", info["keytabs"]["bob"], "bob"], env=env, check=True)
        subprocess.run(["kvno", "HTTP/localhost"], env=env, check=True)
        subprocess.run(cli + ["stop", second], check=True)
        assert not _alive(info["pid"]), "the detached krb5kdc outlived stop"
        print("throwaway-kdc: self-test passed", flush=True)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start", help="start a detached KDC in DIR; print JSON")
    start.add_argument("dir")
    start.add_argument("--realm", default=DEFAULT_REALM)
    start.add_argument("--principal", action="append", metavar="P",
                       help="create P and export its keytab (repeatable)")
    start.add_argument("--watch-pid", type=int, metavar="PID",
                       help="stop the KDC when this process is gone")
    add = sub.add_parser("add", help="add a principal to DIR's KDC; print its keytab path")
    add.add_argument("dir")
    add.add_argument("principal")
    stop = sub.add_parser("stop", help="stop DIR's KDC")
    stop.add_argument("dir")
    sub.add_parser("self-test", help="start, kinit, kvno, stop")
    watch = sub.add_parser("_watch")
    watch.add_argument("dir")
    watch.add_argument("pid", type=int)
    opts = parser.parse_args(argv)
    try:
        if opts.command == "start":
            _cmd_start(opts)
        elif opts.command == "add":
            print(ThrowawayKdc.attach(opts.dir).add_principal(opts.principal), flush=True)
        elif opts.command == "stop":
            ThrowawayKdc.attach(opts.dir).stop()
        elif opts.command == "self-test":
            _cmd_self_test(opts)
        elif opts.command == "_watch":
            _watch(opts.dir, opts.pid)
    except (RuntimeError, OSError) as e:
        sys.exit(str(e))


if __name__ == "__main__":
    main()
