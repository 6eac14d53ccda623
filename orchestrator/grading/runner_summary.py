"""The test runner's own summary lines (pytest, django, sympy): what a run says it ran, to
check the per-test outcomes against, and output that only a forger would print."""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from orchestrator.grading.log_parsers import (
    DJANGO_LINE,
    DJANGO_SUBTEST,
    STATUS_FIRST,
    django_results,
    output_lines,
    sympy_results,
)
from orchestrator.grading.markers import END_MARKER, START_MARKER

# --------------------------------------------------------------------------- runner summaries


class RunnerSummary(BaseModel):
    """A test runner's own closing summary, and the result lines it printed for it.

    ``counts`` holds the runner's numbers (keys ``passed``, ``failed``, ``error``,
    ``skipped``, ``xfailed``, ``xpassed``, and ``ran`` for django), ``reported`` the result
    lines of the output counted per status (pytest: only the short test summary between its
    header and the closing line, ``None`` when there is none; django and sympy: every
    per-test result line). ``subtest_skips`` (django) counts the skips that are a test's
    further skipped subtests: unittest counts every skipped subtest in ``skipped`` but the
    test once in ``Ran``.
    """

    model_config = ConfigDict(frozen=True)

    runner: str
    line: str
    counts: dict[str, int]
    reported: dict[str, int] | None
    subtest_skips: int = 0


_PYTEST_FINAL = re.compile(
    r"^=+ (?P<body>(?!tests finished)(?:no tests ran|\d+ \w+.*?)) in [\d.]+\s*s(?:econds)?\b.*?=+$"
)
_PYTEST_SUMMARY_HEADER = re.compile(r"^=+ short test summary info =+$")
# centred between '=' when it fits the terminal; a long one is printed bare and wraps
# ("tests finished: 42 passed, 1 failed, 1 skipped, 2 expected to fail, " / "in 115.50 seconds")
_SYMPY_FINAL = re.compile(r"^\s*(?:=+ )?tests finished: (?P<body>.*?)(?: =+)?\s*$")
_DJANGO_RAN = re.compile(r"^Ran (?P<ran>\d+) tests? in [\d.]+s$")
_DJANGO_VERDICT = re.compile(r"^(?:OK|FAILED)(?: \((?P<body>.*)\))?$")
_DJANGO_BARE_SKIP = re.compile(r"^skipped(?:\s.*)?$")
_COUNT_WORDS = {
    "passed": "passed",
    "failed": "failed",
    "error": "error",
    "errors": "error",
    "exceptions": "error",
    "skipped": "skipped",
    "xfailed": "xfailed",
    "xpassed": "xpassed",
    "expected to fail": "xfailed",
    "expected to fail but passed": "xpassed",
    "failures": "failed",
    "expected failures": "xfailed",
    "unexpected successes": "xpassed",
}


def _counts(pairs: Iterable[tuple[str, str]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for number, word in pairs:
        key = _COUNT_WORDS.get(word.strip())
        if key:
            counts[key] = counts.get(key, 0) + int(number)
    return counts


def _last_match(pattern: re.Pattern[str], lines: list[str]) -> tuple[int, re.Match[str]] | None:
    for i in range(len(lines) - 1, -1, -1):
        if match := pattern.match(lines[i]):
            return i, match
    return None


def _pytest_summary(lines: list[str]) -> RunnerSummary | None:
    found = _last_match(_PYTEST_FINAL, lines)
    if found is None:
        return None
    final, match = found
    counts = _counts(re.findall(r"(\d+) (\w+)", match["body"]))
    header = _last_match(_PYTEST_SUMMARY_HEADER, lines[:final])
    previous_run = _last_match(_PYTEST_FINAL, lines[:final])  # a nested run's closing line
    reported: dict[str, int] | None = None
    if header is not None and (previous_run is None or previous_run[0] < header[0]):
        reported = {}
        for line in lines[header[0] + 1 : final]:
            if skipped := re.match(r"^SKIPPED \[(\d+)\]", line):
                reported["SKIPPED"] = reported.get("SKIPPED", 0) + int(skipped.group(1))
            elif status := STATUS_FIRST.match(line):
                reported[status.group(1)] = reported.get(status.group(1), 0) + 1
    return RunnerSummary(runner="pytest", line=lines[final], counts=counts, reported=reported)


def _django_summary(lines: list[str], text: str) -> RunnerSummary | None:
    found = _last_match(_DJANGO_RAN, lines)
    if found is None:
        return None
    ran, match = found
    counts = {"ran": int(match["ran"])}
    for line in lines[ran + 1 :]:
        if line.strip() and (verdict := _DJANGO_VERDICT.match(line.strip())):
            pairs = re.findall(r"([a-z ]+)=(\d+)", verdict["body"] or "")
            counts |= _counts((number, word) for word, number in pairs)
            break
    reported: dict[str, int] = {}
    for _, status, from_line in django_results(text):
        if from_line:
            reported[status.value] = reported.get(status.value, 0) + 1
    return RunnerSummary(
        runner="django",
        line=lines[ran],
        counts=counts,
        reported=reported,
        subtest_skips=_subtest_skips(lines[:ran]),
    )


def _subtest_skips(lines: list[str]) -> int:
    """The skip results of unittest's verbose output that are a test's further subtests.

    Up to Python 3.11 the first skipped subtest ends the test's line (``test_x (m.C) ...
    skipped 'why'``) and each further one prints a bare ``skipped 'why'`` line after it;
    from 3.12 every skipped subtest has a line of its own, named with its parameters
    (``  test_x (m.C.test_x) (i=1) ... skipped 'why'``). Either way the test counts once in
    ``Ran`` and each subtest once in ``skipped``.
    """
    count = 0
    after_skip = False  # the previous non-blank line was a skip result
    for line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        result = DJANGO_LINE.match(stripped)
        skip = result is not None and result["word"] is None
        if skip and result is not None and DJANGO_SUBTEST.match(result["desc"].strip()):
            count += 1
        elif after_skip and _DJANGO_BARE_SKIP.match(stripped):
            count += 1
            skip = True
        after_skip = skip
    return count


def _sympy_summary(lines: list[str], text: str) -> RunnerSummary | None:
    found = _last_match(_SYMPY_FINAL, lines)
    if found is None:
        return None
    final, match = found
    counts = _counts(re.findall(r"(\d+) ([a-z ]+?)(?=,|$)", match["body"]))
    reported: dict[str, int] = {}
    for _, status, from_line in sympy_results(text):
        if from_line:
            reported[status.value] = reported.get(status.value, 0) + 1
    return RunnerSummary(runner="sympy", line=lines[final], counts=counts, reported=reported)


def runner_summary(text: str) -> RunnerSummary | None:
    """The closing summary of the runner (pytest, django or sympy) that printed ``text``.

    ``None`` when no runner closed its run in ``text``: it did not start, or it was killed or
    crashed before the end. When several runners' summaries appear (a test that runs
    pytest inside), the one closest to the end counts.
    """
    lines = list(output_lines(text))
    found = [
        summary
        for summary in (
            _pytest_summary(lines),
            _django_summary(lines, text),
            _sympy_summary(lines, text),
        )
        if summary is not None
    ]
    if not found:
        return None
    return max(found, key=lambda summary: _last_index(lines, summary.line))


def forged_output(text: str) -> str | None:
    """Why the section ``text`` (between our markers) cannot all come from the test runner,
    or ``None``. Every test it reports then counts as failing. Reasons:

    * a line that looks like one of our markers: only the eval script prints them, outside
      the test process, with a nonce the code under test does not know;
    * more than one closing summary of the runner where one is expected: pytest's
      ``=== ... in Xs ===`` after its last ``short test summary info`` header (nested runs,
      e.g. pytester output shown with ``-rA``, come before that header), django's ``Ran N
      tests``, sympy's ``tests finished``.
    """
    lines = list(output_lines(text))
    for line in lines:
        if START_MARKER[6:] in line or END_MARKER[6:] in line:
            return f"a line in the test output imitates the eval script's markers: {line[:120]!r}"
    header = _last_match(_PYTEST_SUMMARY_HEADER, lines)
    after = lines[header[0] + 1 :] if header else []
    if header:  # the runner is pytest: what its tests print (pytest's own unittest and
        # pytester runs print "Ran N tests" before the header) is not a second summary
        counts = {"pytest": sum(bool(_PYTEST_FINAL.match(line)) for line in after)}
    else:
        counts = {
            "django": sum(bool(_DJANGO_RAN.match(line)) for line in lines),
            "sympy": sum(bool(_SYMPY_FINAL.match(line)) for line in lines),
        }
    for runner, count in counts.items():
        if count > 1:
            return f"{count} closing {runner} summaries where the runner prints one"
    return None


def _last_index(lines: list[str], line: str) -> int:
    return max(i for i, candidate in enumerate(lines) if candidate == line)
