"""The wider run's baseline, at validation: the gold patch's scope of the repository's tests
(:mod:`orchestrator.grading.wider.scope`), run twice with the gold patch in a fresh
container, in grading's layout (its user and the writable paths validation recorded), with
validation's options (the gold patch applied and installed as grading applies a patch, its
code not audited). Kept with the validation record (``Validation.wider``): a re-grade pays
for it once. A test that does not pass in both runs is left out of the comparison and
counted there (:mod:`orchestrator.grading.wider.compare`)."""

from __future__ import annotations

import time

from orchestrator.atomic import atomic_write_text
from orchestrator.context.run_context import RunContext
from orchestrator.diffs.diff import Patch
from orchestrator.grading import GradingRequest, grade
from orchestrator.grading.evaluation import run_tests
from orchestrator.grading.wider import WiderBaseline, as_directives, task_test_files
from orchestrator.grading.wider.index import read_index
from orchestrator.grading.wider.scope import select_scope
from orchestrator.models import Instance
from orchestrator.recipes.recipe import Recipe
from orchestrator.sandbox import Snapshot
from sandbox_tools.contract import TEST_USER

RUNS = 2  # gold runs of the wider set: a test must pass in each


def wider_baseline(
    ctx: RunContext, instance: Instance, snapshot: Snapshot, recipe: Recipe,
    writable: list[str],
) -> WiderBaseline:  # fmt: skip
    """The gold patch's wider runs for ``instance`` in a fresh container from ``snapshot``
    (``writable``: where validation saw the tests write)."""
    grading = ctx.settings.grading
    user = TEST_USER if grading.unprivileged_tests else None
    out_dir = ctx.instance_dir(instance)
    sandbox = ctx.start_sandbox(snapshot, instance, "validation-wider", network=False)
    try:
        index = read_index(sandbox)
        scope = select_scope(
            Patch.parse(instance.patch).paths, index, exclude=task_test_files(instance),
            max_files=grading.wider_max_files,
        )  # fmt: skip
        baseline = WiderBaseline(index=index, files=scope.files, scope=scope.why, cut=scope.cut)
        if not scope.files:
            why = "no test module beyond the task's imports the gold patch's modules"
            return baseline.model_copy(update={"why_not": why})
        directives = as_directives(instance, scope.files)
        started = time.monotonic()
        request = GradingRequest(
            timeout=grading.test_timeout, fuzz=grading.patch_fuzz, test_user=user,
            writable=tuple(writable), directives=tuple(directives), audit=False,
            reinstall_in_place=True,
        )  # fmt: skip
        first = grade(sandbox, instance, recipe, instance.patch, request).test_run
        runs = [first] if first is not None else []
        seconds = [time.monotonic() - started]
        while first is not None and len(runs) < RUNS:
            started = time.monotonic()
            runs.append(
                run_tests(
                    sandbox,
                    instance,
                    recipe,
                    timeout=grading.test_timeout,
                    test_user=user,
                    writable=writable,
                    directives=directives,
                )  # fmt: skip
            )
            seconds.append(time.monotonic() - started)
    finally:
        sandbox.remove()
    for number, run in enumerate(runs, 1):
        atomic_write_text(
            out_dir / f"validation_wider_output_{number}.txt", run.output, errors="replace"
        )
    broken = [run for run in runs if run.timed_out or run.crash or run.forged]
    why = ""
    if len(runs) < RUNS:
        why = "the gold patch could not be applied again"
    elif broken:
        why = broken[0].crash or broken[0].forged or "the gold patch's wider run timed out"
    return baseline.model_copy(
        update={
            "runs": [run.outcomes for run in runs],
            "seconds": [round(s, 3) for s in seconds], "why_not": why[:500],
        }
    )  # fmt: skip
