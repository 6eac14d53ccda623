"""A headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
JSON messages ended by a NUL byte on file descriptors 3 and 4), for tests of pages that open
from disk: their width at a window size, links, screenshots. No package beyond the browser."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """One headless browser with one page; ``close`` (or ``with``) ends it."""

    def __init__(self, profile: Path) -> None:
        binary = chromium()
        assert binary, "chromium is not installed"
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # the browser reads commands on fd 3 and writes answers on fd 4
        self._process = subprocess.Popen(
            [
                binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--hide-scrollbars", f"--user-data-dir={profile}",
                "--remote-debugging-pipe", "about:blank",
            ],
            close_fds=False,  # the child's own fds 3 and 4 (preexec_fn) must stay open
            preexec_fn=_pipes_as_3_and_4(to_browser_r, from_browser_w),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        attached = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)
        self._session = attached["sessionId"]
        self.call("Page.enable", session=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._process.kill()
        self._process.wait(timeout=30)
        os.close(self._to_browser)
        os.close(self._from_browser)

    def call(self, method: str, session: bool = False, **params: Any) -> dict[str, Any]:
        """Send a command and return its result (events that arrive meanwhile are dropped)."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self._session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            answer = self._read()
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})
        raise TimeoutError(method)

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise EOFError("the browser closed its pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def open(self, url: str, width: int, height: int = 900) -> None:
        """Load ``url`` in a window ``width`` pixels wide and wait until it has loaded."""
        self.call(
            "Emulation.setDeviceMetricsOverride", session=True,
            width=width, height=height, deviceScaleFactor=1, mobile=False,
        )  # fmt: skip
        self.call("Page.navigate", session=True, url=url)
        deadline = time.monotonic() + 30
        while (
            self.evaluate("document.readyState") != "complete"
            or self.evaluate("location.href") != url
        ):
            if time.monotonic() > deadline:
                raise TimeoutError(url)
            time.sleep(0.05)

    def evaluate(self, expression: str) -> Any:
        result = self.call(
            "Runtime.evaluate", session=True, expression=expression, returnByValue=True
        )
        return result["result"].get("value")

    def screenshot(self, path: Path, full_page: bool = True, max_height: int = 6000) -> None:
        """A PNG of the page (its whole height with ``full_page``, at most ``max_height``
        pixels) at the window's width."""
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": full_page}
        if full_page:
            width = self.evaluate("document.documentElement.clientWidth")
            height = min(self.evaluate("document.documentElement.scrollHeight"), max_height)
            params["clip"] = {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}
        data = self.call("Page.captureScreenshot", session=True, **params)["data"]
        path.write_bytes(base64.b64decode(data))


def _pipes_as_3_and_4(read_end: int, write_end: int):  # noqa: ANN202
    def move() -> None:
        # through descriptors above 4 first: either end may be 3 or 4 itself
        high_read = fcntl.fcntl(read_end, fcntl.F_DUPFD, 10)
        high_write = fcntl.fcntl(write_end, fcntl.F_DUPFD, 10)
        os.dup2(high_read, 3)
        os.dup2(high_write, 4)

    return move
