"""The live display of ``run``/``validate`` on the terminal."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table

from orchestrator.frontends.cli.common import console


class LiveProgress:
    """The live display of ``run``/``validate``: a progress bar with the statuses so far and
    the ETA, the instances in flight with their phase, and one printed line per finished
    instance (the lines stay, above the bar)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.statuses: dict[str, int] = {}
        self.in_flight: dict[str, str] = {}
        self.started = time.monotonic()
        self.live: Live | None = None

    @contextlib.contextmanager
    def live_display(self) -> Iterator[None]:
        with Live(self.render(), console=console, refresh_per_second=2, transient=True) as live:
            self.live = live
            try:
                yield
            finally:
                self.live = None

    def update(self, event) -> None:  # noqa: ANN001 - a scheduler.ProgressEvent
        self.done, self.total = event.done, event.total or self.total
        self.statuses, self.in_flight = dict(event.statuses), dict(event.in_flight)
        if event.kind == "finished" and event.result is not None:
            r = event.result
            self.finished(
                r.instance_id,
                f"[bold]{r.verdict}[/]"
                + (f" ({r.reason})" if r.reason else "")
                + (f" [dim](* {r.reduced_tests} test(s) left out)[/]" if r.reduced_tests else ""),
                r.timings.get("total", 0),
            )
        self.refresh()

    def phase(self, instance_id: str, phase: str) -> None:
        self.in_flight[instance_id] = phase
        self.refresh()

    def finished(self, instance_id: str, outcome: str, seconds: float) -> None:
        """Print the one line of a finished instance (``update`` counts it)."""
        self.in_flight.pop(instance_id, None)
        console.print(f"  {self.done}/{self.total} {instance_id}: {outcome} in {seconds:.0f}s")

    def count(self, status: str) -> None:
        """Count a finished instance (for callers without progress events)."""
        self.done += 1
        self.statuses[status] = self.statuses.get(status, 0) + 1

    def refresh(self) -> None:
        if self.live is not None:
            self.live.update(self.render())

    def render(self) -> Table:
        table = Table.grid(padding=(0, 1))
        eta = ""
        if self.done and self.done < self.total:
            elapsed = time.monotonic() - self.started
            from orchestrator.frontends.report import format_seconds

            eta = f"ETA {format_seconds(elapsed / self.done * (self.total - self.done))}"
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(self.statuses.items()))
        table.add_row(
            ProgressBar(total=max(self.total, 1), completed=self.done, width=30),
            f"[bold]{self.done}/{self.total}[/]",
            statuses,
            eta,
        )
        for instance_id, phase in self.in_flight.items():
            table.add_row("", f"  {instance_id}: {phase}")
        return table
