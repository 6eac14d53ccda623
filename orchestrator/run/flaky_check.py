"""Whether a graded verdict gets its deciding tests run again, and with what
(:mod:`orchestrator.grading.flaky_reruns`): the run's settings, and validation's selection of
tests by name."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from orchestrator.context.run_context import RunContext
from orchestrator.grading.evaluation import Evaluation
from orchestrator.grading.flaky_reruns import Reruns, rerun_deciding_tests
from orchestrator.models import Instance, Reason, Status
from orchestrator.sandbox import Sandbox
from orchestrator.spec.recipes import Recipe
from orchestrator.validation.test_selection import selected_directives

# a test run alone may take this long at least, and twice the graded run's time at most
MIN_RERUN_TIMEOUT = 120.0


def rerun_deciding(
    ctx: RunContext, instance: Instance, grader: Sandbox, recipe: Recipe, evaluation: Evaluation,
    writable: Sequence[str], test_user: str | None, instance_dir: Path,
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
        select=lambda names: selected_directives(recipe, instance, names),
    )  # fmt: skip
