"""The CLI's tables, laid out to be read whole in an 80-column terminal.

No vertical rules (they cost three columns each); ids that users copy (instances, containers)
are never cut; long free text folds onto more lines rather than being truncated.
"""

from __future__ import annotations

from typing import Literal

from rich import box
from rich.table import Table

Overflow = Literal["fold", "keep"]

DIFFICULTY_SHORT = {
    "<15 min fix": "<15m",
    "15 min - 1 hour": "15m-1h",
    "1-4 hours": "1-4h",
    ">4 hours": ">4h",
}


def plain_table(*columns: tuple[str, Overflow]) -> Table:
    """A table of ``(header, overflow)`` columns: ``keep`` never wraps (ids, numbers, times),
    ``fold`` folds whole onto further lines (free text, names)."""
    table = Table(
        box=box.SIMPLE_HEAD, padding=(0, 1), collapse_padding=True, pad_edge=False,
        show_edge=False,
    )  # fmt: skip
    for header, overflow in columns:
        if overflow == "keep":
            table.add_column(header, no_wrap=True)
        else:
            table.add_column(header, overflow="fold")
    return table


def short_difficulty(difficulty: str | None) -> str:
    """SWE-bench's difficulty label in a few characters (``15 min - 1 hour`` → ``15m-1h``)."""
    if not difficulty:
        return ""
    return DIFFICULTY_SHORT.get(difficulty, difficulty)
