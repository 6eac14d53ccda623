"""Flaky outcomes said out loud: the tests that decided a verdict against the patch, run again.

A verdict rests on one run of the tests, as the official harness's does. When a test's outcome
decides it against the patch — a PASS_TO_PASS test that failed, or the only FAIL_TO_PASS test
that failed — that test runs again alone, in a fresh process (a new run of the eval script)
with another hash seed each time (``PYTHONHASHSEED`` 1, 2, ...; the first run's was random),
at most ``flaky_reruns`` times, stopping at the first changed outcome. A test whose outcome
changes (passing against failing) is listed in the result's ``flaky_tests`` with the outcomes
seen, the graded one first; the verdict stays the first run's (the official rule), and the
reports mark it (``breaking_resolved~``).

Cost: at most ``flaky_reruns`` runs of the eval script per deciding test, and only for a
verdict against the patch with at most :data:`MAX_DECIDING` deciding tests (more failures
than that are no flake); each run pays the script's fixed cost (test patch, bytecode sweep)
and one test's time. The time spent is the result's ``timings["flaky_reruns"]``.

A test runs alone where its runner selects by name
(:func:`orchestrator.recipes.selection.selected_directives`): pytest (its node id, every
parametrization), sympy's ``bin/test`` (its file(s) and ``-k name``), django's
``runtests.py`` (``module.Class.test_name`` from ``test_name (module.Class)``). Other tests
(django names with a docstring line, runners that cannot select) are not re-run.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.atomic import atomic_write_text
from orchestrator.grading.evaluation import Evaluation, run_tests
from orchestrator.grading.log_parsers import PASSING, match_expected
from orchestrator.models import CaseGroups, CaseStatus, Instance, Reason, Status
from orchestrator.recipes.recipe import Recipe
from orchestrator.recipes.selection import selected_directives
from orchestrator.sandbox import Sandbox

# more deciding tests than this: the patch broke them, no flake decides the verdict
MAX_DECIDING = 5
MISSING = "MISSING"  # the test is not in the output
TIMED_OUT = "TIMEOUT"
HASH_SEED = "PYTHONHASHSEED"  # exported by the eval script, as a recipe's environment is
# a test run alone may take this long at least, and twice the graded run's time at most
MIN_RERUN_TIMEOUT = 120.0


def deciding_tests(groups: CaseGroups) -> list[str]:
    """The tests whose outcome decided the verdict against the patch: every PASS_TO_PASS
    failure, and the FAIL_TO_PASS failure when it is the only one; none past
    :data:`MAX_DECIDING`."""
    tests = list(groups.pass_to_pass_failed)
    if len(groups.fail_to_pass_failed) == 1:
        tests += groups.fail_to_pass_failed
    return tests if len(tests) <= MAX_DECIDING else []


def outcome(name: str, outcomes: Mapping[str, CaseStatus]) -> str:
    """The outcome of ``name`` in a run (matched as grading matches), or ``MISSING``."""
    status = match_expected([name], dict(outcomes))[name]
    return status.value if status is not None else MISSING


def changed(seen: Sequence[str]) -> bool:
    """Whether the outcomes ``seen`` disagree on passing (PASSED/XFAIL against the rest)."""
    return len({value in {status.value for status in PASSING} for value in seen}) > 1


@dataclass
class Reruns:
    """What the re-runs found: flaky tests with their outcomes, and the seconds they took."""

    flaky: dict[str, list[str]] = field(default_factory=dict)
    seconds: float = 0.0
    runs: int = 0
    seen: dict[str, list[str]] = field(default_factory=dict)  # every re-run test's outcomes


def rerun_deciding_tests(
    sandbox: Sandbox,
    instance: Instance,
    recipe: Recipe,
    groups: CaseGroups,
    first: Mapping[str, CaseStatus],
    *,
    times: int,
    timeout: float,
    test_user: str | None = None,
    writable: Sequence[str] = (),
    log_dir: Path | None = None,
) -> Reruns:
    """Run each deciding test of ``groups`` alone up to ``times`` times in ``sandbox`` (the
    patch applied; ``first``: the graded run's outcomes); see the module doc."""
    found = Reruns()
    started = time.monotonic()
    for name in deciding_tests(groups) if times > 0 else []:
        directives = selected_directives(recipe, instance, [name], django_labels=True)
        if directives is None:
            continue
        seen = found.seen[name] = [outcome(name, first)]
        for seed in range(1, times + 1):
            seeded = recipe.model_copy(update={"env": {**recipe.env, HASH_SEED: str(seed)}})
            run = run_tests(
                sandbox, instance, seeded, timeout=timeout, test_user=test_user,
                writable=writable, directives=directives,
            )  # fmt: skip
            found.runs += 1
            seen.append(TIMED_OUT if run.timed_out else outcome(name, run.outcomes))
            if changed(seen):
                found.flaky[name] = seen
                break
    found.seconds = time.monotonic() - started
    if log_dir is not None and found.runs:
        lines = [
            f"{name}: {' '.join(seen)}{' (flaky)' if name in found.flaky else ''}"
            for name, seen in found.seen.items()
        ]
        summary = f"{found.runs} re-run(s), {found.seconds:.1f} s; flaky: {len(found.flaky)}\n"
        atomic_write_text(
            log_dir / "flaky_reruns.log", summary + "".join(f"{ln}\n" for ln in lines)
        )
    return found


def rerun_deciding(
    sandbox: Sandbox, instance: Instance, recipe: Recipe, evaluation: Evaluation, *,
    timeout: float, **options: Any,
) -> Reruns:  # fmt: skip
    """The deciding tests of a verdict against the patch, run again alone in ``sandbox`` (the
    patch applied; ``timeout``: the graded run's; ``options``: :func:`rerun_deciding_tests`'s,
    ``times`` first). No re-run for a resolved patch, an error or output that cannot be trusted
    (a reason), or after a reinstall (the tests ran in another sandbox)."""
    run, groups = evaluation.test_run, evaluation.groups
    if run is None or groups is None or evaluation.reason != Reason.NONE:
        return Reruns()
    if evaluation.status == Status.RESOLVED or "reinstall" in evaluation.logs:
        return Reruns()
    return rerun_deciding_tests(
        sandbox, instance, recipe, groups, run.outcomes,
        timeout=min(timeout, max(MIN_RERUN_TIMEOUT, 2 * run.duration)), **options,
    )  # fmt: skip
