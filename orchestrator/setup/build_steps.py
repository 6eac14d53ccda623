"""What a long build says while it runs: each step announced with an estimate, a line every
``tick`` seconds while it lasts (how long so far, about how long left, what it is doing),
and at the end where the time went.

The estimate of a step is how long it took the last time it ran on this host (kept in a
small JSON file, ``record``); with no earlier build it says so instead of guessing."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from orchestrator.atomic import atomic_write_text

Progress = Callable[[str], None]
TICK = 15.0  # seconds between the lines of a step that is still running


class Steps:
    """The steps of one build, timed; ``record`` keeps each step's last duration (the next
    build's estimate)."""

    def __init__(
        self, name: str, progress: Progress, record: Path | None = None, tick: float = TICK
    ) -> None:
        self.name = name
        self.progress = progress
        self.record = record
        self.tick = tick
        self.took: dict[str, float] = {}

    def _earlier(self) -> dict[str, float]:
        if self.record is None:
            return {}
        try:
            saved = json.loads(self.record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return {k: float(v) for k, v in saved.items() if isinstance(v, int | float)}

    @contextlib.contextmanager
    def step(self, what: str, doing: Callable[[], str] | None = None) -> Iterator[None]:
        """Time the block as step ``what``; ``doing`` says what it is doing now (a line of
        its output), shown on each tick."""
        estimate = self._earlier().get(what)
        said = (
            f"about {estimate:.0f} s, as the last build here"
            if estimate
            else "no earlier build here to estimate from"
        )
        self.progress(f"{self.name}: {what} ({said})")
        started = time.monotonic()
        stop = threading.Event()

        def tick() -> None:
            while not stop.wait(self.tick):
                elapsed = time.monotonic() - started
                if estimate is None:
                    left = ""
                elif elapsed < estimate:
                    left = f", about {estimate - elapsed:.0f} s left"
                else:
                    left = f", longer than the last build's {estimate:.0f} s"
                now = doing() if doing is not None else ""
                self.progress(
                    f"{self.name}: {what}: {elapsed:.0f} s so far{left}"
                    + (f" ({now})" if now else "")
                )

        ticker = threading.Thread(target=tick, name=f"steps-{what}", daemon=True)
        ticker.start()
        try:
            yield
        finally:
            stop.set()
            ticker.join()
        self.took[what] = time.monotonic() - started

    def summary(self) -> str:
        """Where the time went, longest step first; the durations are kept for the next
        build's estimates."""
        if self.record is not None and self.took:
            with contextlib.suppress(OSError):
                atomic_write_text(self.record, json.dumps({**self._earlier(), **self.took}) + "\n")
        total = sum(self.took.values())
        parts = ", ".join(
            f"{what} {seconds:.0f} s"
            for what, seconds in sorted(self.took.items(), key=lambda item: -item[1])
        )
        return f"{self.name}: {total:.0f} s in all: {parts}"
