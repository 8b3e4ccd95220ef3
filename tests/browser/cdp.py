"""A minimal Chrome DevTools Protocol client over ``--remote-debugging-pipe`` (standard library only).

Chromium reads commands from fd 3 and writes replies and events to fd 4, each a JSON message ended by a
NUL byte.  :class:`Browser` starts headless Chromium with those pipes, opens one page and offers what
the report test needs: navigate and wait for the load event, evaluate JavaScript (awaiting promises),
and capture a PNG screenshot.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import time


def _above(fd: int, low: int) -> int:
    """``fd`` moved to the lowest free descriptor >= ``low``."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, low)
    os.close(fd)
    return moved


class Browser:
    def __init__(self, width: int = 1600, height: int = 1000, timeout: float = 60.0):
        exe = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
        if exe is None:
            raise FileNotFoundError("no chromium on PATH; fix: apt-get install chromium (Debian's package)")
        self.timeout = timeout
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        # the child's ends above fd 4, so that placing them at 3 and 4 cannot close one another
        to_chrome_r, from_chrome_w = (_above(fd, 10) for fd in (to_chrome_r, from_chrome_w))
        flags = [
            "--headless",
            "--remote-debugging-pipe",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-dev-shm-usage",
            f"--window-size={width},{height}",
            "about:blank",
        ]
        # the pipes go to fds 3 and 4 of the browser, as --remote-debugging-pipe expects
        script = f'exec "$0" "$@" 3<&{to_chrome_r} 4>&{from_chrome_w} {to_chrome_r}<&- {from_chrome_w}>&-'
        self.proc = subprocess.Popen(
            ["bash", "-c", script, exe, *flags],
            pass_fds=(to_chrome_r, from_chrome_w),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._next, self._buffer, self.events = 0, b"", []
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.send("Page.enable", session=True)
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=True,
        )

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._from_chrome, 1 << 16)
            if not chunk:
                raise RuntimeError(f"chromium closed its pipe (exit code {self.proc.poll()})")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict | None = None, *, session: bool = False) -> dict:
        """One command; its result (a CDP error raises)."""
        self._next += 1
        message = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str) -> dict:
        deadline = time.monotonic() + self.timeout
        for i, event in enumerate(self.events):
            if event.get("method") == method:
                return self.events.pop(i)
        while True:
            event = self._read_message(deadline)
            if event.get("method") == method:
                return event
            self.events.append(event)

    def goto(self, url: str) -> None:
        self.events.clear()
        self.send("Page.navigate", {"url": url}, session=True)
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str):
        """The value of a JavaScript expression (a promise is awaited); a thrown exception raises."""
        got = self.send(
            "Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True}, session=True
        )
        if "exceptionDetails" in got:
            raise RuntimeError(f"JavaScript failed: {got['exceptionDetails']}")
        return got["result"].get("value")

    def screenshot(self, path) -> None:
        data = self.send("Page.captureScreenshot", {"format": "png"}, session=True)["data"]
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(data))

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.close(self._to_chrome)
        os.close(self._from_chrome)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
