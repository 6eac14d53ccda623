"""Which impossible twins are effective: the gold patch fails them, deterministically, by the
mutated assertion.

After a gold run that validates, the test patch's files are read from a fresh container of
the instance image with the gold patch applied (:func:`read_test_files`), the generator
proposes candidates (:func:`orchestrator.grading.twins.generate.twin_candidates`), and the
FAIL_TO_PASS tests run there with one candidate per test in place (one twin test patch,
:func:`~orchestrator.grading.twins.generate.twin_test_patch`), twice, in grading's layout.
A twin is **effective** when its test fails both times (:func:`ineffective` says why not:
the gold patch passes it, it errored where the runner tells errors from failures, it was
skipped or not reported, the run gave no outcomes, it failed away from the mutated line).
Each round tries every test's next candidate, for at most :data:`ROUNDS` rounds, until a
test has :data:`POOL` effective twins (grading draws one of them at random per grading); a
test left without an effective twin gets its reason (``twin_gaps``).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence

from orchestrator.grading.evaluation import SuiteRun
from orchestrator.grading.log_parsers import match_expected
from orchestrator.grading.twins.failure import at_mutated_line
from orchestrator.grading.twins.generate import twin_candidates, twin_test_patch
from orchestrator.grading.twins.model import Twin
from orchestrator.grading.twins.pair import clashes
from orchestrator.models import CaseStatus, Instance
from orchestrator.recipes.recipe import touched_test_files
from orchestrator.safe_git import SHELL_GIT_FUNCTION
from orchestrator.sandbox import Sandbox, SandboxError
from sandbox_tools.contract import TESTBED

ROUNDS = 5  # candidates tried per test at most
POOL = 3  # effective twins kept per test at most
RUNS = 2  # runs of each twin test patch: a twin must fail in every one
_WORK = "/tmp/swe-green-twin-files"

# runs the F2P tests with a twin test patch in place, as often as asked: their runs
RunTwins = Callable[[str], list[SuiteRun]]


def read_test_files(
    sandbox: Sandbox, instance: Instance
) -> tuple[dict[str, str | None], dict[str, str]]:
    """The test patch's files at the base commit (None: the patch creates it) and after the
    test patch, read in ``sandbox`` (the repository at the base commit, its test files as
    the base has them); the repository is left as it was."""
    paths = touched_test_files(instance.test_patch)
    base = shlex.quote(instance.base_commit)
    lines = [
        "set -e", SHELL_GIT_FUNCTION, f"rm -rf {_WORK} && mkdir -p {_WORK}/tree",
        f"cd {TESTBED}",
    ]  # fmt: skip
    for path in paths:
        quoted, target = shlex.quote(path), shlex.quote(f"{_WORK}/tree/{path}")
        lines.append(
            f'if git cat-file -e {base}:{quoted} 2>/dev/null; then mkdir -p "$(dirname '
            f'{target})" && git show {base}:{quoted} > {target}; fi'
        )
    sandbox.write_file(f"{_WORK}.patch", instance.test_patch.encode("utf-8", "surrogateescape"))
    lines += [f"cp -a {_WORK}/tree {_WORK}/base", f"cd {_WORK}/tree", f"git apply {_WORK}.patch"]
    done = sandbox.exec(["bash", "-c", "\n".join(lines)], timeout=120)
    if done.exit_code != 0:
        raise SandboxError(f"the test files could not be read: {done.output[-500:]}")
    base_files: dict[str, str | None] = {}
    files: dict[str, str] = {}
    for path in paths:
        base_files[path] = _read(sandbox, f"{_WORK}/base/{path}")
        text = _read(sandbox, f"{_WORK}/tree/{path}")
        if text is not None:
            files[path] = text
    sandbox.exec(["rm", "-rf", _WORK, f"{_WORK}.patch"], timeout=60)
    return base_files, files


def _read(sandbox: Sandbox, path: str) -> str | None:
    try:
        return sandbox.read_file(path).decode("utf-8", "surrogateescape")
    except SandboxError:
        return None


def ineffective(
    twin: Twin, runs: Sequence[SuiteRun], log_format: str, files: Mapping[str, str]
) -> str | None:
    """Why ``twin`` is not effective in ``runs`` (the gold patch's runs with it in place),
    or None when it is: its test failed in every run, by the mutated assertion where the
    output shows where (pytest)."""
    for run in runs:
        if run.timed_out or run.crash or run.forged or run.section is None:
            return "the twin run gave no outcomes"
        status = match_expected([twin.test], run.outcomes)[twin.test]
        if status is None:
            return "the twin's test is not reported"
        if status in (CaseStatus.PASSED, CaseStatus.XFAIL):
            return "the gold patch passes it"
        if status == CaseStatus.SKIPPED:
            return "the twin's test is skipped"
        if status == CaseStatus.ERROR and log_format == "pytest":
            return "the twin's test errors (pytest: not an assertion)"
        if log_format == "pytest" and not at_mutated_line(twin, run.section, files):
            return "the twin's test fails away from the mutated line"
    return None


def effective_twins(
    instance: Instance, tests: Sequence[str], base_files: Mapping[str, str | None],
    files: Mapping[str, str], run_twins: RunTwins, log_format: str,
) -> tuple[list[Twin], dict[str, str]]:  # fmt: skip
    """The effective twins of ``tests`` (FAIL_TO_PASS tests), at most :data:`POOL` per test,
    and for each test without one the reason: candidates tried round by round (see the
    module doc)."""
    try:
        candidates = twin_candidates(instance, files, per_test=ROUNDS)
    except Exception as exc:  # noqa: BLE001 - a generator failure leaves the tests untwinned
        return [], {test: f"the generator failed: {exc!r}" for test in tests}
    gaps = {t: candidates.missing.get(t, "no candidate twin") for t in tests}
    pending = {t: candidates.by_test[t] for t in tests if candidates.by_test.get(t)}
    found: list[Twin] = []
    for number in range(ROUNDS):
        batch: list[Twin] = []
        for twin in (twins[number] for twins in pending.values() if len(twins) > number):
            if clashes(twin, batch):  # another test's twin in this run changes its function
                gaps.setdefault(twin.test, "its test function is another test's twin's already")
            else:
                batch.append(twin)
        if not batch:
            break
        runs = run_twins(twin_test_patch(instance.test_patch, base_files, batch, files))
        for twin in batch:
            why = ineffective(twin, runs, log_format, files)
            if why is None:
                found.append(twin)
                gaps.pop(twin.test, None)
                if sum(other.test == twin.test for other in found) >= POOL:
                    pending.pop(twin.test)
            elif not any(other.test == twin.test for other in found):
                gaps[twin.test] = f"{why} ({twin.path}:{twin.line}: {twin.mutated.strip()})"
    return found, gaps
