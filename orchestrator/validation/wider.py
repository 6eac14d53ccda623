"""The wider run's baseline, at validation: the gold patch's scope of the repository's tests
(:mod:`orchestrator.grading.wider.scope`), run twice with the gold patch in a fresh
container, in grading's layout (its user and the writable paths validation recorded), the
gold patch applied and installed as grading applies a patch, and the audit hook installed as
in grading (what it costs a test, a deep recursion near the interpreter's limit, gold's runs
pay too; what it reports of the gold patch's lines is not read). Kept with the validation
record (``Validation.wider``): a re-grade pays for it once. A test that does not pass in
both runs is left out of the comparison and counted there
(:mod:`orchestrator.grading.wider.compare`). A test module pytest cannot collect with the
gold patch (its import fails: a dependency the environment lacks) would stop the whole
session: it is left out (``unrunnable``) and the rest run again."""

from __future__ import annotations

import re
import time

from orchestrator.atomic import atomic_write_text
from orchestrator.context.run_context import RunContext
from orchestrator.diffs.diff import Patch
from orchestrator.grading import GradingRequest, grade
from orchestrator.grading.audit import audit_config
from orchestrator.grading.evaluation import SuiteRun, run_tests
from orchestrator.grading.wider import (
    EMPTY_SCOPE,
    WiderBaseline,
    as_directives,
    task_test_files,
)
from orchestrator.grading.wider.index import read_index
from orchestrator.grading.wider.scope import select_scope
from orchestrator.models import Instance
from orchestrator.recipes.recipe import Recipe
from orchestrator.sandbox import Sandbox, Snapshot
from sandbox_tools.contract import EVAL_DIR, TEST_USER, TESTBED

RUNS = 2  # gold runs of the wider set: a test must pass in each
COLLECTION_RETRIES = 3  # runs again after leaving out modules that cannot be collected
_UNCOLLECTABLE = re.compile(r"^_* ERROR collecting (\S+\.py) _*$", re.M)
# a conftest whose import fails stops the whole session (flask's examples need their own
# packages installed): pytest names it by its absolute path
_BROKEN_CONFTEST = re.compile(
    r"(?:ImportError while loading conftest '|could not load )(\S+?/)conftest\.py'?", re.M
)


def uncollectable(output: str, files: list[str]) -> list[str]:
    """The test modules of ``files`` (repository paths) that pytest could not collect in
    ``output``: those whose import failed, and every one below a conftest whose import
    failed."""
    found = _UNCOLLECTABLE.findall(output)
    for directory in _BROKEN_CONFTEST.findall(output):
        below = directory.removeprefix(f"{TESTBED}/")
        if not below.startswith("/"):  # in the repository
            found += [path for path in files if path.startswith(below)]
    return [path for path in dict.fromkeys(found) if path in files]


def wider_baseline(
    ctx: RunContext, instance: Instance, snapshot: Snapshot, recipe: Recipe,
    writable: list[str],
) -> WiderBaseline:  # fmt: skip
    """The gold patch's wider runs for ``instance`` in a fresh container from ``snapshot``
    (``writable``: where validation saw the tests write)."""
    sandbox = ctx.start_sandbox(snapshot, instance, "validation-wider", network=False)
    try:
        index = read_index(sandbox)
        scope = select_scope(
            Patch.parse(instance.patch).paths, index, exclude=task_test_files(instance),
            max_files=ctx.settings.grading.wider_max_files,
        )  # fmt: skip
        baseline = WiderBaseline(index=index, files=scope.files, scope=scope.why, cut=scope.cut)
        if not scope.files:
            return baseline.model_copy(update={"why_not": EMPTY_SCOPE})
        baseline, runs = GoldRuns(ctx, instance, recipe, sandbox, writable).run(baseline)
    finally:
        sandbox.remove()
    for number, run in enumerate(runs, 1):
        output = ctx.instance_dir(instance) / f"validation_wider_output_{number}.txt"
        atomic_write_text(output, run.output, errors="replace")
    broken = [run for run in runs if run.timed_out or run.crash or run.forged]
    why = ""
    if not baseline.files:
        why = "no test module of the gold patch's scope can be collected here"
    elif len(runs) < RUNS:
        why = "the gold patch could not be applied again"
    elif broken:
        why = broken[0].crash or broken[0].forged or "the gold patch's wider run timed out"
    return baseline.model_copy(update={"runs": [run.outcomes for run in runs], "why_not": why})


class GoldRuns:
    """The gold patch applied once in ``sandbox``, then its wider runs there."""

    def __init__(
        self, ctx: RunContext, instance: Instance, recipe: Recipe, sandbox: Sandbox,
        writable: list[str],
    ) -> None:  # fmt: skip
        grading = ctx.settings.grading
        self.instance, self.recipe, self.sandbox = instance, recipe, sandbox
        self.writable = writable
        self.user = TEST_USER if grading.unprivileged_tests else None
        self.timeout, self.fuzz = grading.test_timeout, grading.patch_fuzz
        self.seconds: list[float] = []

    def run(self, baseline: WiderBaseline) -> tuple[WiderBaseline, list[SuiteRun]]:
        """``baseline`` with the modules that run and the seconds, and the gold runs (two,
        unless the patch did not apply or no module could be collected)."""
        files, unrunnable = list(baseline.files), list[str]()
        first = self._first(files)
        runs = [first] if first is not None else []
        retries = 0
        while runs and retries <= COLLECTION_RETRIES:
            broken = uncollectable(runs[-1].output, files)
            if broken:  # it would stop every run: left out, the rest run again
                unrunnable += broken
                files = [path for path in files if path not in broken]
                runs.clear()
                retries += 1
            elif len(runs) >= RUNS:
                break
            if not files:
                break
            runs.append(self._again(files))
        if first is not None and not runs:  # none of the modules could be collected
            unrunnable, files = unrunnable + files, []
        update = {"files": files, "unrunnable": unrunnable, "seconds": self.seconds}
        return baseline.model_copy(update=update), runs

    def _first(self, files: list[str]) -> SuiteRun | None:
        """The gold patch applied (and installed again where it must be), and a first run."""
        started = time.monotonic()
        request = GradingRequest(
            timeout=self.timeout, fuzz=self.fuzz, test_user=self.user,
            writable=tuple(self.writable), directives=tuple(as_directives(self.instance, files)),
            reinstall_in_place=True,
        )  # fmt: skip
        run = grade(self.sandbox, self.instance, self.recipe, self.instance.patch, request).test_run
        self.seconds.append(round(time.monotonic() - started, 3))
        return run

    def _again(self, files: list[str]) -> SuiteRun:
        started = time.monotonic()
        watched = audit_config(
            self.sandbox, self.instance, self.recipe, self.instance.patch, TESTBED, EVAL_DIR
        )
        run = run_tests(
            self.sandbox, self.instance, self.recipe, timeout=self.timeout, test_user=self.user,
            writable=self.writable, directives=as_directives(self.instance, files), audit=watched,
        )  # fmt: skip
        self.seconds.append(round(time.monotonic() - started, 3))
        return run
