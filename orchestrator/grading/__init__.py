"""Phase 7: tests and scoring. :func:`grade` applies the patch in a container of the instance
image, reinstalls what the patch's build inputs change in a container of its own
(:mod:`.reinstall`), runs the instance's tests with the network off as an unprivileged user
(:mod:`.script`, between the markers of :mod:`.markers`), watches what the code under test
does (:mod:`.audit`), parses the log (:mod:`.log_parsers`) and classifies the result
(:mod:`.classify`); then the tests that decided a verdict against the patch run again
(:mod:`.flaky_reruns`), and a verdict that some FAIL_TO_PASS test passed is checked with
impossible twins in a fresh container (:mod:`.twins.check`)."""

from __future__ import annotations

import time
from typing import Any

from orchestrator.context.successor import Successor
from orchestrator.grading.evaluation import Evaluation, evaluate
from orchestrator.grading.flaky_reruns import rerun_deciding
from orchestrator.grading.twins.check import Fresh, TwinSet, judge_twins, twin_run
from orchestrator.models import Instance
from orchestrator.patches.diff import Patch
from orchestrator.recipes.recipe import Recipe
from orchestrator.sandbox import Sandbox

__all__ = ["grade"]


def grade(
    sandbox: Sandbox, instance: Instance, recipe: Recipe, patch: Patch | str | None, *,
    flaky_reruns: int = 0, twins: TwinSet | None = None, fresh: Fresh | None = None,
    twin_successor: Successor | None = None, **options: Any,
) -> Evaluation:  # fmt: skip
    """Grade ``patch`` with ``options`` (:func:`.evaluation.evaluate`), then run each test
    that decided a verdict against it again, up to ``flaky_reruns`` times, in the same
    container (:func:`.flaky_reruns.rerun_deciding`): those whose outcome changed are the
    evaluation's ``flaky_tests``. Beside all that, the patch is graded in a ``fresh``
    container with impossible twins in place of the tests (``twins``: validation's, None
    when validation is off; :func:`.twins.check.twin_run`), which checks a verdict in which
    a FAIL_TO_PASS test passed (:func:`.twins.check.judge_twins`); ``twin_successor``: the
    twin run's ``successor`` (its own containers' names)."""
    twin_options = {**options, "successor": twin_successor or options.get("successor")}
    with twin_run(instance, recipe, patch, twins, fresh, twin_options) as twin_outcome:
        evaluation = _graded(sandbox, instance, recipe, patch, flaky_reruns, options)
        waited = time.monotonic()
        twins_run = twin_outcome()
        evaluation.twin_wait = time.monotonic() - waited
    return judge_twins(evaluation, twins_run, options.get("log_dir"))


def _graded(
    sandbox: Sandbox, instance: Instance, recipe: Recipe, patch: Patch | str | None,
    flaky_reruns: int,
    options: dict[str, Any],
) -> Evaluation:  # fmt: skip
    """The graded run and the flaky re-runs."""
    evaluation = evaluate(sandbox, instance, recipe, patch, **options)
    reruns = rerun_deciding(
        sandbox, instance, recipe, evaluation, timeout=options["timeout"], times=flaky_reruns,
        test_user=options.get("test_user"), writable=options.get("writable", ()),
        log_dir=options.get("log_dir"),
    )  # fmt: skip
    if reruns.runs:
        evaluation.flaky_tests, evaluation.rerun_seconds = reruns.flaky, reruns.seconds
        evaluation.logs["flaky_reruns"] = "flaky_reruns.log"
    return evaluation
