"""Where a twin's test failed: by its mutated assertion, as the gold patch fails it (pure)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from orchestrator.grading.twins.model import Twin


def at_mutated_line(twin: Twin, section: str, files: Mapping[str, str]) -> bool:
    """Whether pytest's report of the twin's test, where it names a line of the twin's file
    (``path:LINE:``), names one of the mutated segment's lines (give or take its statement's
    lines around it); True when the report names no line of that file."""
    block = failure_block(section, twin.test)
    if block is None:
        return True
    lines = [int(n) for n in re.findall(rf"(?m)^{re.escape(twin.path)}:(\d+):", block)]
    if not lines:
        return True
    text = files.get(twin.path, "")
    last = twin.line + text[twin.start : twin.end].count("\n")
    return any(twin.line - 5 <= n <= last + 5 for n in lines)


def failure_block(section: str, test: str) -> str | None:
    """pytest's failure report of ``test`` (from its ``___ name ___`` heading to the next)."""
    name = test.rsplit("::", 1)[-1]
    headings = list(re.finditer(r"(?m)^_{3,} (.+?) _{3,}$", section))
    for index, heading in enumerate(headings):
        title = heading.group(1).strip()
        if title == name or title.endswith(f".{name}"):
            end = headings[index + 1].start() if index + 1 < len(headings) else len(section)
            return section[heading.end() : end]
    return None
