"""What the wider run says: the patch's outcomes against the gold patch's two runs (pure).

A test is compared when both gold runs reported it with the same verdict (passing: PASSED or
XFAIL, as grading counts them; failing: anything else) and it is not one of the task's own
tests. A test of the wider set that did not pass in both gold runs (failing, flaky, needing
the network) is left out of the regressions and counted (``left_out``). A test that passed
twice with gold and fails with the patch, or is missing from its output, is a regression
beyond the task's tests, whatever it exercises. A compared test whose verdict differs from
gold's, in either direction, is listed in ``differs`` when it exercises a function or method
the gold patch changes (:mod:`.reach`: its code, or its class's, names one): where the
task's tests are silent, the patch behaves unlike gold in what gold changed. How many tests
both gold runs agree on exercise one is counted (``exercising``): the ground ``differs`` is
drawn from.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from orchestrator.grading.log_parsers import PASSING
from orchestrator.models import CaseStatus, WiderTest

MISSING = "MISSING"  # a test the run did not report
EXCERPT_LINES = 12
EXCERPT_CHARS = 1200
# where a runner's block of one failure ends: the next block's header, a rule, a summary
_BLOCK_END = re.compile(r"^([_=]{3,}.*|(FAIL|ERROR): .*)$")


@dataclass
class Comparison:
    """The wider run against gold: see the module doc."""

    regressions: list[WiderTest] = field(default_factory=list)
    differs: list[WiderTest] = field(default_factory=list)
    compared: int = 0
    exercising: int = 0
    left_out: int = 0
    no_baseline: int = 0


def stable_baseline(runs: Sequence[Mapping[str, CaseStatus]]) -> dict[str, bool]:
    """The tests every gold run reported with one verdict: name -> passed. A test missing
    from a run, or passing in one and failing in another, is not stable."""
    if not runs:
        return {}
    names = set(runs[0]).intersection(*runs[1:])
    verdicts = {name: {run[name] in PASSING for run in runs} for name in names}
    return {name: seen.pop() for name, seen in verdicts.items() if len(seen) == 1}


def compare(
    baseline: Mapping[str, bool], gold_reported: Iterable[str],
    patch: Mapping[str, CaseStatus], task_tests: Iterable[str], section: str,
    exercises: Callable[[str], bool],
) -> Comparison:  # fmt: skip
    """The patch's run (``patch``: its outcomes; ``section``: its output) against
    ``baseline`` (:func:`stable_baseline`); ``gold_reported``: every test any gold run
    reported (a test outside it has no baseline); ``task_tests``: the FAIL_TO_PASS and
    PASS_TO_PASS names, never compared here; ``exercises``: whether a test exercises a
    function the gold patch changes (:meth:`.reach.Reach.covers`), for ``differs``."""
    task = set(task_tests)
    result = Comparison()
    result.no_baseline = len(set(patch) - set(gold_reported) - task)
    for name in sorted(set(gold_reported) - task):
        if name not in baseline:
            result.left_out += 1
            continue
        gold_passed = baseline[name]
        if not gold_passed:
            result.left_out += 1
        outcome = patch.get(name)
        passed = outcome in PASSING
        result.compared += gold_passed
        reaches = exercises(name)
        result.exercising += reaches
        if passed == gold_passed:
            continue
        shown = outcome.value if outcome is not None else MISSING
        test = WiderTest(
            name=name, gold="PASSED" if gold_passed else "FAILED", patch=shown,
            excerpt="" if passed else failure_excerpt(section, name),
        )  # fmt: skip
        if reaches:
            result.differs.append(test)
        if gold_passed:
            result.regressions.append(test)
    return result


def failure_excerpt(section: str, name: str) -> str:
    """The failure of ``name`` in the test output: pytest's block under its ``____ name ____``
    header, sympy's and django's under the line naming it (the block's first lines and its
    last, where the error is), else the lines naming it."""
    short = name.rsplit("::", 1)[-1]
    lines = section.splitlines()
    header = re.compile(r"^[_=]{3,} .*" + re.escape(short.split("[", 1)[0]) + r".* [_=]{3,}$")
    for at, line in enumerate(lines):
        if header.match(line) or (line.startswith(("ERROR: ", "FAIL: ")) and short in line):
            end = next(
                (i for i in range(at + 2, len(lines)) if _BLOCK_END.match(lines[i])), len(lines)
            )
            block = lines[at:end]
            if len(block) > EXCERPT_LINES:
                block = [*block[:2], "[...]", *block[-(EXCERPT_LINES - 3) :]]
            return _cut("\n".join(block))
    named = [line for line in lines if short in line and not line.rstrip().endswith(" ok")]
    return _cut("\n".join(named[:EXCERPT_LINES]))


def _cut(text: str) -> str:
    if len(text) <= EXCERPT_CHARS:
        return text
    return text[: EXCERPT_CHARS // 3] + " [...] " + text[-(EXCERPT_CHARS * 2 // 3) :]
