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

from orchestrator.diffs.diff import Patch
from orchestrator.grading.evaluation import Evaluation, evaluate
from orchestrator.grading.flaky_reruns import rerun_deciding
from orchestrator.grading.request import GradingRequest
from orchestrator.grading.twins.check import TWIN_LOG_DIR, judge_twins, twin_run
from orchestrator.models import Instance
from orchestrator.recipes.recipe import Recipe
from orchestrator.sandbox import Sandbox

__all__ = ["GradingRequest", "grade"]


def grade(
    sandbox: Sandbox, instance: Instance, recipe: Recipe, patch: Patch | str | None,
    request: GradingRequest,
) -> Evaluation:  # fmt: skip
    """Grade ``patch`` (phase 6's :class:`~orchestrator.diffs.diff.Patch`; a text is read
    once here; None or blank: ``no_op``/``empty_patch`` without a test run) for ``instance``
    in ``sandbox``, a container of the instance image at the base commit, as ``request``
    says (:class:`.request.GradingRequest`).

    One graded run (:func:`.evaluation.evaluate`), then each test that decided a verdict
    against it runs again, up to ``request.flaky_reruns`` times, in the same container
    (:func:`.flaky_reruns.rerun_deciding`): those whose outcome changed are the
    evaluation's ``flaky_tests``. Beside all that, the patch is graded in a
    ``request.fresh`` container with impossible twins in place of the tests
    (:func:`.twins.check.twin_run`), which checks a verdict in which a FAIL_TO_PASS test
    passed (:func:`.twins.check.judge_twins`).

    What the patch or its tests do is a verdict, never an exception. Raises
    :class:`~orchestrator.errors.SandboxError` when a container fails (cannot be reached,
    cannot check the patch's paths, or a patch must be installed again and
    ``request.successor`` is None); a failed twin run only leaves the verdict unchecked."""
    parsed = Patch.parse(patch) if isinstance(patch, str) else patch
    twin_request = request.model_copy(
        update={"log_dir": request.log_dir / TWIN_LOG_DIR if request.log_dir else None,
                "successor": request.twin_successor or request.successor}
    )  # fmt: skip

    def grade_twins(fresh: Sandbox, test_patch: str) -> Evaluation:
        return _evaluated(fresh, instance, recipe, parsed, twin_request, test_patch)

    twins, fresh = request.twins, request.fresh
    with twin_run(instance, twins, fresh, request.excluded_f2p, grade_twins) as twin_outcome:
        evaluation = _graded(sandbox, instance, recipe, parsed, request)
        waited = time.monotonic()
        twins_run = twin_outcome()
        evaluation.twin_wait = time.monotonic() - waited
    return judge_twins(evaluation, twins_run, request.log_dir)


def _evaluated(
    sandbox: Sandbox, instance: Instance, recipe: Recipe, patch: Patch | None,
    request: GradingRequest, test_patch: str | None = None,
) -> Evaluation:  # fmt: skip
    """One graded run (:func:`.evaluation.evaluate`) with ``request``'s options."""
    return evaluate(
        sandbox, instance, recipe, patch, timeout=request.timeout, fuzz=request.fuzz,
        excluded_p2p=request.excluded_p2p, log_dir=request.log_dir,
        test_user=request.test_user, excluded_f2p=request.excluded_f2p,
        writable=request.writable, successor=request.successor,
        test_patch=test_patch if test_patch is not None else request.test_patch,
        record=request.record, directives=request.directives, audit=request.audit,
        tests_without_patch=request.tests_without_patch,
        reinstall_in_place=request.reinstall_in_place, run=request.run_tests,
    )  # fmt: skip


def _graded(
    sandbox: Sandbox, instance: Instance, recipe: Recipe, patch: Patch | None,
    request: GradingRequest,
) -> Evaluation:  # fmt: skip
    """The graded run and the flaky re-runs."""
    evaluation = _evaluated(sandbox, instance, recipe, patch, request)
    reruns = rerun_deciding(
        sandbox, instance, recipe, evaluation, timeout=request.timeout,
        times=request.flaky_reruns, test_user=request.test_user, writable=request.writable,
        log_dir=request.log_dir,
    )  # fmt: skip
    if reruns.runs:
        evaluation.flaky_tests, evaluation.rerun_seconds = reruns.flaky, reruns.seconds
        evaluation.logs["flaky_reruns"] = "flaky_reruns.log"
    return evaluation
