"""A small client of the Chrome DevTools Protocol over one page target,
for scripts/webui-suite: start headless Chromium, navigate, evaluate
JavaScript in the page, collect console errors, take screenshots.

Chromium is started with --remote-debugging-port=0 and a private profile
directory; the port it picked is read from DevToolsActivePort in that
directory. The timeouts are hang guards only.
"""

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request

import websocket  # websocket-client

START_TIMEOUT = 60
CALL_TIMEOUT = 60


def chromium_binary():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    """Headless Chromium and one page, with its console errors."""

    def __init__(self, width=1400, height=1000):
        self.profile = tempfile.mkdtemp(prefix="webui-chromium-")
        binary = chromium_binary()
        if binary is None:
            raise RuntimeError("chromium is not installed")
        args = [binary, "--headless=new", "--remote-debugging-port=0",
                f"--user-data-dir={self.profile}", "--no-first-run",
                "--no-default-browser-check", "--disable-gpu",
                "--disable-extensions", "--disable-background-networking",
                "--disable-component-update", "--disable-sync",
                f"--window-size={width},{height}", "about:blank"]
        # Root (CI, containers) cannot use Chromium's sandbox.
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")
        self.log = open(os.path.join(self.profile, "chromium.log"), "w")
        self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                                        stdout=self.log, stderr=self.log)
        port = self._devtools_port()
        target = self._page_target(port)
        self.ws = websocket.create_connection(target["webSocketDebuggerUrl"],
                                              timeout=CALL_TIMEOUT, suppress_origin=True)
        self.next_id = 0
        self.events = []
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")

    def _devtools_port(self):
        path = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"chromium exited ({self.process.returncode}): "
                                   + self.chromium_log())
            try:
                with open(path) as f:
                    first = f.readline().strip()
                if first:
                    return int(first)
            except FileNotFoundError:
                pass
            time.sleep(0.1)
        raise RuntimeError("chromium did not open its DevTools port: " + self.chromium_log())

    def _page_target(self, port):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list",
                                        timeout=CALL_TIMEOUT) as r:
                targets = json.load(r)
            pages = [t for t in targets if t.get("type") == "page"]
            if pages:
                return pages[0]
            time.sleep(0.1)
        raise RuntimeError("chromium shows no page target")

    def chromium_log(self):
        try:
            with open(os.path.join(self.profile, "chromium.log")) as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def call(self, method, **params):
        """Sends one command and returns its result; events that arrive
        meanwhile are kept in self.events."""
        self.next_id += 1
        call_id = self.next_id
        self.ws.send(json.dumps({"id": call_id, "method": method, "params": params}))
        deadline = time.monotonic() + CALL_TIMEOUT
        while time.monotonic() < deadline:
            message = json.loads(self.ws.recv())
            if message.get("id") == call_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)
        raise RuntimeError(f"{method}: no answer within {CALL_TIMEOUT} s")

    def wait_for_event(self, method, since):
        deadline = time.monotonic() + CALL_TIMEOUT
        while time.monotonic() < deadline:
            if any(e["method"] == method for e in self.events[since:]):
                return
            message = json.loads(self.ws.recv())
            if "method" in message:
                self.events.append(message)
        raise RuntimeError(f"no {method} within {CALL_TIMEOUT} s")

    def open(self, url):
        """Navigates to url, waits for its load event, and returns the
        console errors, exceptions and error log entries it caused."""
        since = len(self.events)
        result = self.call("Page.navigate", url=url)
        if result.get("errorText"):
            raise RuntimeError(f"{url}: {result['errorText']}")
        self.wait_for_event("Page.loadEventFired", since)
        # Let late errors (a script after load) arrive: one round trip.
        self.evaluate("1")
        return self.errors(since)

    def errors(self, since=0):
        found = []
        for e in self.events[since:]:
            method, params = e["method"], e.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                found.append("exception: " + details.get("text", "")
                             + " " + json.dumps(details.get("exception", {}).get("description", "")))
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                args = [a.get("value", a.get("description", "")) for a in params.get("args", [])]
                found.append("console." + params["type"] + ": " + " ".join(map(str, args)))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                entry = params["entry"]
                found.append("log: " + entry.get("text", "") + " " + entry.get("url", ""))
        return found

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"evaluating {expression!r}: {result['exceptionDetails']}")
        return result.get("result", {}).get("value")

    def screenshot(self, path, selector):
        """Saves a PNG of the element matched by selector (its box, with a
        small margin), at the element's full size."""
        box = self.evaluate(
            "(() => { const r = document.querySelector(%s).getBoundingClientRect();"
            " return {x: r.left + window.scrollX, y: r.top + window.scrollY,"
            " width: r.width, height: r.height}; })()" % json.dumps(selector))
        margin = 8
        width = int(box["x"] + box["width"] + 2 * margin)
        height = int(box["y"] + box["height"] + 2 * margin)
        self.call("Emulation.setDeviceMetricsOverride", width=max(width, 800),
                  height=max(height, 600), deviceScaleFactor=1, mobile=False)
        shot = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                         clip={"x": max(box["x"] - margin, 0), "y": max(box["y"] - margin, 0),
                               "width": box["width"] + 2 * margin,
                               "height": box["height"] + 2 * margin, "scale": 1})
        with open(path, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        self.call("Emulation.clearDeviceMetricsOverride")

    def close(self):
        try:
            self.ws.close()
        except Exception:  # noqa: BLE001 - closing after a failure
            pass
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)
