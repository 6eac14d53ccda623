"""Whether a graded verdict gets its deciding tests run again, and with what
(:mod:`orchestrator.grading.flaky_reruns`): the run's settings."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orchestrator.context.run_context import RunContext
from orchestrator.grading import grade
from orchestrator.grading.evaluation import Evaluation
from orchestrator.grading.flaky_reruns import Reruns, rerun_deciding_tests
from orchestrator.models import Instance, InstanceResult, Reason, Status
from orchestrator.sandbox import Sandbox
from orchestrator.spec.recipes import Recipe

# a test run alone may take this long at least, and twice the graded run's time at most
MIN_RERUN_TIMEOUT = 120.0


def grade_and_rerun(
    ctx: RunContext, grader: Sandbox, instance: Instance, recipe: Recipe, patch: str,
    **options: Any,
) -> tuple[Evaluation, Reruns]:  # fmt: skip
    """:func:`orchestrator.grading.grade` with ``options``, then :func:`rerun_deciding` in
    the same container."""
    evaluation = grade(grader, instance, recipe, patch, **options)
    reruns = rerun_deciding(
        ctx, instance, grader, recipe, evaluation, options.get("writable", ()),
        options.get("test_user"), options.get("log_dir"),
    )  # fmt: skip
    return evaluation, reruns


def record_reruns(result: InstanceResult, timings: dict[str, float], reruns: Reruns) -> None:
    """What the re-runs found, in the instance's result: its flaky tests, their time, log."""
    if reruns.runs:
        timings["flaky_reruns"], result.flaky_tests = reruns.seconds, reruns.flaky
        result.logs["flaky_reruns"] = "flaky_reruns.log"


def rerun_deciding(
    ctx: RunContext, instance: Instance, grader: Sandbox, recipe: Recipe, evaluation: Evaluation,
    writable: Sequence[str], test_user: str | None, instance_dir: Path | None,
) -> Reruns:  # fmt: skip
    """The deciding tests of a verdict against the patch, run again alone in ``grader`` (the
    patch applied). None for a resolved patch, an error or output that cannot be trusted
    (a reason), or after a reinstall (the tests ran in another sandbox)."""
    run, groups = evaluation.test_run, evaluation.groups
    if run is None or groups is None or evaluation.reason != Reason.NONE:
        return Reruns()
    if evaluation.status == Status.RESOLVED or "reinstall" in evaluation.logs:
        return Reruns()
    grading = ctx.settings.grading
    return rerun_deciding_tests(
        grader, instance, recipe, groups, run.outcomes, times=grading.flaky_reruns,
        timeout=min(grading.test_timeout, max(MIN_RERUN_TIMEOUT, 2 * run.duration)),
        test_user=test_user, writable=writable, log_dir=instance_dir,
    )  # fmt: skip
