"""A real headless Chromium (Debian's ``chromium``) driven by the Chrome DevTools protocol over a pipe
(``--remote-debugging-pipe``: JSON messages ending in a NUL byte on file descriptors 3 and 4), so tests need no
websocket client, no network port and no browser download. Console messages and uncaught exceptions are kept.

    with Browser() as b:
        b.open("file:///.../index.html")
        b.evaluate("document.title")
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--disable-default-apps", "--mute-audio", "--hide-scrollbars")


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class BrowserError(RuntimeError):
    pass


class Browser:
    def __init__(self, width: int = 1400, height: int = 1000, timeout: float = 30.0):
        self.width, self.height, self.timeout = width, height, timeout
        self.console: list[dict] = []      # {"level", "text"} of console calls and log entries
        self.exceptions: list[str] = []
        self._id = 0
        self._buffer = b""
        self._session = None

    # ------------------------------------------------------------------------------------------------ process
    def __enter__(self) -> "Browser":
        binary = chromium()
        if binary is None:
            raise BrowserError("no chromium on PATH (Debian: apt-get install chromium)")
        self._profile = tempfile.mkdtemp(prefix="spark-topics-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # the child reads commands on fd 3 and writes replies on fd 4
        self.process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self._profile}", f"--window-size={self.width},{self.height}",
             "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            close_fds=False, preexec_fn=_fds(to_browser_r, from_browser_w))
        os.close(to_browser_r)
        os.close(from_browser_w)
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self._session = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
        for domain in ("Page.enable", "Runtime.enable", "Log.enable"):
            self.call(domain, session=True)
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=self.width, height=self.height,
                  deviceScaleFactor=1, mobile=False)
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.call("Browser.close")
        except (BrowserError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)

    # ----------------------------------------------------------------------------------------------- protocol
    def call(self, method: str, session: bool = False, **params) -> dict:
        self._id += 1
        message = {"id": self._id, "method": method, "params": params}
        if session:
            message["sessionId"] = self._session
        os.write(self._to_browser, json.dumps(message).encode("utf-8") + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self._event(reply)

    def _read(self, deadline: float) -> dict:
        import select

        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("chromium did not answer in time")
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if ready:
                chunk = os.read(self._from_browser, 1 << 20)
                if not chunk:
                    raise BrowserError("chromium closed the pipe")
                self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def _event(self, event: dict) -> None:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled":
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
            self.console.append({"level": params.get("type"), "text": text})
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            self.exceptions.append(details.get("exception", {}).get("description") or details.get("text", ""))
        elif method == "Log.entryAdded":
            entry = params.get("entry", {})
            self.console.append({"level": entry.get("level"), "text": entry.get("text", "") + " " +
                                 entry.get("url", "")})
        elif method == "Page.loadEventFired":
            self._loaded = True

    def pump(self, seconds: float = 0.2) -> None:
        """Read the events that arrive within ``seconds``."""
        import select

        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if b"\0" in self._buffer or select.select([self._from_browser], [], [], max(end - time.monotonic(), 0))[0]:
                if b"\0" not in self._buffer:
                    chunk = os.read(self._from_browser, 1 << 20)
                    if not chunk:
                        return
                    self._buffer += chunk
                while b"\0" in self._buffer:
                    message, self._buffer = self._buffer.split(b"\0", 1)
                    self._event(json.loads(message))

    # -------------------------------------------------------------------------------------------------- pages
    def open(self, url: str, ready: str = "window.SPARK_TOPICS_READY === true") -> None:
        self._loaded = False
        self.call("Page.navigate", session=True, url=url)
        self.wait_for(ready)

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"].get("exception", {}).get("description")
            raise BrowserError(f"{expression[:80]}: {details}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float | None = None):
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            try:
                value = self.evaluate(expression)
            except BrowserError:
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out waiting for {expression}")
            self.pump(0.05)

    def screenshot(self, path: str, full_page: bool = False) -> None:
        import base64

        params = {"format": "png"}
        if full_page:
            size = self.call("Page.getLayoutMetrics", session=True)["cssContentSize"]
            params.update(clip={"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 4000),
                                "scale": 1}, captureBeyondViewport=True)
        data = self.call("Page.captureScreenshot", session=True, **params)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def errors(self) -> list[str]:
        """Uncaught exceptions and console errors or warnings seen so far."""
        return self.exceptions + [c["text"] for c in self.console if c["level"] in ("error", "warning", "assert")]


def _fds(read_end: int, write_end: int):
    """preexec: put the pipe ends at the descriptors Chromium expects (3: commands in, 4: replies out)."""
    def move():
        r, w = os.dup(read_end), os.dup(write_end)
        os.dup2(r, 3)
        os.dup2(w, 4)
    return move
