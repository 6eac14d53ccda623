"""The lines of a test run's output that concern one test: its failure section when the
runner printed one (pytest's and sympy's ``____ name ____``, unittest's and django's
``FAIL: name``), else the lines that name it. Pure functions of the text."""

from __future__ import annotations

import re

EXCERPT_LINES = 60  # at most this many lines of one test's excerpt
NAMING_LINES = 5  # lines naming a test, when no failure section concerns it

_PYTEST_SECTION = re.compile(r"^_{3,} (.+?) _{3,}$")
_UNITTEST_SECTION = re.compile(r"^(?:FAIL|ERROR): (.+)$")
_DASHES = re.compile(r"^-{10,}$")  # unittest's rule under a section's header, and after it
_SECTION_END = re.compile(r"^(?:={10,}.*|_{3,} .+ _{3,})$")


def short_names(test: str) -> list[str]:
    """The ways a runner's sections may name ``test``, longest first: the full name, pytest's
    ``Class.test`` and ``test[param]`` of a node id, django's method of ``test (module.Class)``,
    sympy's and unittest's bare function name."""
    names = [test]
    if "::" in test:
        parts = test.split("::")
        names.append(".".join(parts[1:]))
        names.append(parts[-1])
    match = re.match(r"^(\w+) \((.+)\)", test)
    if match:
        names.append(match[1])
    bare = re.sub(r"\[.*\]$", "", names[-1])
    names.append(bare)
    return list(dict.fromkeys(n for n in names if n))


def _names_in(line: str, names: list[str]) -> bool:
    """Whether ``line`` names one of ``names`` as a whole: a name without parameters does not
    name a parametrized test (``test_x`` is not ``test_x[1-2]``)."""
    return any(n in line and re.search(_whole(n), line) for n in names)


def _whole(name: str) -> str:
    """A pattern of ``name`` as a whole word; a name without parameters not followed by
    some (``[``)."""
    after = r"[\w]" if "[" in name else r"[\w\[]"
    return rf"(?<![\w.]){re.escape(name)}(?!{after})"


def failure_section(lines: list[str], test: str) -> list[str]:
    """The failure section the runner printed for ``test``; empty when there is none. The
    most specific name that heads a section wins (the full id before the bare name)."""
    headers = [
        (i, header[1])
        for i, line in enumerate(lines)
        if (header := _PYTEST_SECTION.match(line.strip()) or _UNITTEST_SECTION.match(line.strip()))
    ]
    for name in short_names(test):
        start = next((i for i, text in headers if _names_in(text, [name])), None)
        if start is not None:
            return _section_from(lines, start)
    return []


def _section_from(lines: list[str], i: int) -> list[str]:
    """The section whose header is ``lines[i]``, up to the next section or rule."""
    end = i + 1
    while end < len(lines):
        following = lines[end].strip()
        if _SECTION_END.match(following) or (
            end > i + 1 and (_UNITTEST_SECTION.match(following) or _DASHES.match(following))
        ):
            break
        end += 1
    while end > i + 1 and not lines[end - 1].strip():
        end -= 1
    return lines[i:end]


def naming_lines(lines: list[str], test: str, limit: int = NAMING_LINES) -> list[str]:
    """The first ``limit`` lines that name ``test`` (its full name, else its short names)."""
    found = [line for line in lines if test in line]
    if not found:
        names = short_names(test)[1:]
        found = [line for line in lines if names and _names_in(line, names)] if names else []
    return found[:limit]


def excerpt(output: str, test: str, failed: bool, limit: int = EXCERPT_LINES) -> str:
    """What of ``output`` concerns ``test``: a failing test's failure section (else the lines
    naming it), a passing test's lines naming it; at most ``limit`` lines, "" when none."""
    lines = output.splitlines()
    chosen = (failure_section(lines, test) if failed else []) or naming_lines(lines, test)
    if len(chosen) > limit:
        cut = len(chosen) - limit
        chosen = [*chosen[: limit - 1], f"[... {cut} more lines: see the full output ...]"]
    return "\n".join(chosen)
