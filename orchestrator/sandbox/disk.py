"""The disk budget where the engine cannot enforce one: a watcher thread per sandbox.

It measures the sandbox's writable layer (``du`` of a directory this process can read, else
a size the backend reports), polling faster as the size nears the budget, and kills the
sandbox once it is over. ``bench/disk.py`` measures how fast a runaway writer is stopped.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable

from orchestrator.sandbox.models import format_bytes


class DiskWatcher:
    """Polls a sandbox's writable-layer size; kills the sandbox once it is over ``limit``.

    The poll interval shrinks as the size nears the budget, from the rate of growth seen
    (never below ``min_poll``), so a fast writer is measured often and an idle container
    costs one ``du`` per ``max_poll`` seconds.
    """

    min_poll = 0.05

    def __init__(
        self,
        name: str,
        limit: int,
        max_poll: float = 1.0,
        *,
        upper_dir: str | None,
        reported_size: Callable[[], int | None],
        kill: Callable[[], None],
        baseline: int = 0,
    ) -> None:
        self.limit = limit
        # bytes already in the layer when the budget starts (files a snapshot restored):
        # the budget counts what is written after them
        self.baseline = baseline
        self.max_poll = max(max_poll, self.min_poll)
        self.upper_dir = upper_dir
        self.reported_size = reported_size
        self.kill = kill
        self.size = 0  # the last measurement, bytes
        self.peak = 0
        self.exceeded_at: float | None = None  # time.monotonic() when it was killed
        self.exceeded_size = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"disk-{name}", daemon=True)

    def start(self) -> DiskWatcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    @property
    def exceeded(self) -> bool:
        return self.exceeded_at is not None

    def message(self) -> str:
        return (
            f"the container wrote more than its disk budget of {format_bytes(self.limit)} "
            f"({format_bytes(self.exceeded_size)} measured) and was stopped"
        )

    def measure(self) -> int | None:
        """Bytes written since the budget started (allocated blocks of the writable layer,
        less :attr:`baseline`), or None when they cannot be read."""
        size = self.layer_size()
        return None if size is None else max(size - self.baseline, 0)

    def layer_size(self) -> int | None:
        """Bytes in the writable layer (allocated blocks), or None when it cannot be read."""
        if self.upper_dir is not None:
            done = subprocess.run(
                ["du", "-s", "-x", "-B1", self.upper_dir],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            # files vanishing mid-walk make du complain but the total still stands
            first = done.stdout.split()
            if first and first[0].isdigit():
                return int(first[0])
        return self.reported_size()

    def _loop(self) -> None:
        last_size, last_time = 0, time.monotonic()
        interval = self.min_poll
        while not self._stop.wait(interval):
            size = self.measure()
            now = time.monotonic()
            if size is None:
                interval = self.max_poll
                continue
            self.size, self.peak = size, max(self.peak, size)
            if size > self.limit:
                self.exceeded_size = size
                self.exceeded_at = now
                self.kill()
                return
            rate = max(size - last_size, 0) / max(now - last_time, 1e-3)
            last_size, last_time = size, now
            headroom_time = (self.limit - size) / rate if rate > 0 else self.max_poll
            interval = min(self.max_poll, max(self.min_poll, headroom_time / 4))
