"""Phase 7: tests and scoring. :func:`grade` applies the patch in a container of the instance
image, reinstalls what the patch's build inputs change in a container of its own
(:mod:`.reinstall`), runs the instance's tests with the network off as an unprivileged user
(:mod:`.script`, between the markers of :mod:`.markers`), watches what the code under test
does (:mod:`.audit`), parses the log (:mod:`.log_parsers`) and classifies the result
(:mod:`.classify`); then the tests that decided a verdict against the patch run again
(:mod:`.flaky_reruns`). Where validation knows impossible twins, the secret pair runs
before the official run and judges a verdict in which a FAIL_TO_PASS test passed
(:mod:`.twins.pair`, :mod:`.twins.check`)."""

from __future__ import annotations

import random
from contextlib import AbstractContextManager
from pathlib import Path

from orchestrator.diffs.diff import Patch
from orchestrator.grading.evaluation import (
    Evaluation,
    Ready,
    SuiteRun,
    evaluate,
    prepared_patch,
    tested,
    watched_run,
)
from orchestrator.grading.flaky_reruns import rerun_deciding
from orchestrator.grading.page_cache import evict_page_cache
from orchestrator.grading.reinstall.contained import needs_reinstall
from orchestrator.grading.request import GradingRequest
from orchestrator.grading.twins.check import NO_TWIN, NOT_VALIDATED, judge_twins
from orchestrator.grading.twins.pair import PairOutcome, RunPair, choose, secret_pair
from orchestrator.models import Instance
from orchestrator.recipes.harness_files import drop_harness_files
from orchestrator.recipes.recipe import Recipe
from orchestrator.recipes.selection import selected_directives
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

    One official run (:func:`.evaluation.evaluate`), then each test that decided a verdict
    against it runs again, up to ``request.flaky_reruns`` times, in the same container
    (:func:`.flaky_reruns.rerun_deciding`): those whose outcome changed are the
    evaluation's ``flaky_tests``. Where ``request.twins`` has a twin for a FAIL_TO_PASS
    test, the secret pair (:func:`.twins.pair.secret_pair`) runs first and judges the
    verdict (:func:`.twins.check.judge_twins`): each run in a container of its own from
    ``request.pair_box`` with the patch applied the same way, one after the other; then the
    official run in ``sandbox``. A patch that must be installed again is built once, in
    ``sandbox``, and every run starts from its files in a fresh container of its own
    (``request.replicas``).

    What the patch or its tests do is a verdict, never an exception. Raises
    :class:`~orchestrator.errors.SandboxError` when a container fails (cannot be reached,
    cannot check the patch's paths, or a patch must be installed again and
    ``request.successor`` is None)."""
    parsed = Patch.parse(patch) if isinstance(patch, str) else patch
    excluded = set(request.excluded_f2p)
    tests = [name for name in instance.FAIL_TO_PASS if name not in excluded]
    twins = request.twins
    if twins is None or request.pair_box is None or not choose(twins.twins, tests):
        why = NOT_VALIDATED if twins is None else NO_TWIN
        evaluation = _graded(sandbox, instance, recipe, parsed, request)
        return judge_twins(evaluation, PairOutcome(why=why))
    directives = selected_directives(recipe, instance, tests) if twins.selected else None

    def pair_with(run_pair: RunPair) -> PairOutcome:
        return secret_pair(
            instance, twins, tests, directives, run_pair, recipe.log_format, request.log_dir,
            random.SystemRandom(),
        )  # fmt: skip

    if (
        parsed is not None
        and request.replicas is not None
        and _installs_again(parsed, instance, recipe)
    ):  # one build, in a container with no role: every run starts from its files
        with _prepared(sandbox, instance, recipe, parsed, request) as ready:
            if isinstance(ready, Evaluation):
                return judge_twins(ready, PairOutcome())
            with request.replicas(ready.sandbox) as fresh:
                built = ready

                def run_built(
                    text: str, selection: list[str] | None, logs: Path | None, blind: bool
                ) -> SuiteRun:
                    with fresh() as box:
                        return _pair_run(box, instance, recipe, built, request, text, selection,
                                         logs, blind)  # fmt: skip

                pair = pair_with(run_built)
                with fresh() as official:
                    evaluation = _graded_run(official, instance, recipe, ready, request)
        return judge_twins(evaluation, pair, instance)
    boxes = request.pair_box

    def run_applied(
        text: str, selection: list[str] | None, logs: Path | None, blind: bool
    ) -> SuiteRun:
        # each run in a container of its own, the patch applied there as in the official one
        with boxes() as box, _prepared(box, instance, recipe, parsed, request, logs=False) as ready:
            if isinstance(ready, Evaluation):
                return SuiteRun(crash=f"the patch did not apply again: {ready.message}")
            return _pair_run(box, instance, recipe, ready, request, text, selection, logs, blind)

    pair = pair_with(run_applied)
    evaluation = _graded(sandbox, instance, recipe, parsed, request)
    return judge_twins(evaluation, pair, instance)


def _installs_again(patch: Patch, instance: Instance, recipe: Recipe) -> bool:
    """Whether grading installs ``patch`` again (:mod:`.reinstall`)."""
    return needs_reinstall(recipe, drop_harness_files(patch, instance, recipe)[0])


def _prepared(
    sandbox: Sandbox, instance: Instance, recipe: Recipe, patch: Patch | None,
    request: GradingRequest, *, logs: bool = True,
) -> AbstractContextManager[Ready | Evaluation]:  # fmt: skip
    """``patch`` applied in ``sandbox`` (and installed again) as ``request`` says, its logs
    in ``request.log_dir`` (``logs`` False: none written)."""
    return prepared_patch(
        sandbox, instance, recipe, patch, timeout=request.timeout, fuzz=request.fuzz,
        log_dir=request.log_dir if logs else None,
        excluded=(list(request.excluded_p2p), list(request.excluded_f2p)),
        successor=request.successor,
    )  # fmt: skip


def _pair_run(
    sandbox: Sandbox, instance: Instance, recipe: Recipe, ready: Ready, request: GradingRequest,
    test_patch: str, directives: list[str] | None, log_dir: Path | None, blind: bool,
) -> SuiteRun:  # fmt: skip
    """One run of the secret pair in ``sandbox`` (``ready``'s patch applied there): the
    official run's user, writable paths, limits and audit hook, with ``test_patch`` and
    ``directives``; ``blind``: the page cache emptied first (:mod:`.page_cache`)."""
    if blind:
        evict_page_cache(sandbox)
    return watched_run(
        sandbox, instance, recipe, ready, timeout=request.timeout, log_dir=log_dir,
        test_user=request.test_user, writable=request.writable, audit=request.audit,
        test_patch=test_patch, directives=directives,
    )  # fmt: skip


def _graded_run(
    sandbox: Sandbox, instance: Instance, recipe: Recipe, ready: Ready, request: GradingRequest
) -> Evaluation:
    """The official run of ``ready``'s patch in ``sandbox``, and the flaky re-runs."""
    evaluation = tested(
        sandbox, instance, recipe, ready, timeout=request.timeout, log_dir=request.log_dir,
        test_user=request.test_user, writable=request.writable, audit=request.audit,
        test_patch=request.test_patch,
    )  # fmt: skip
    return _rerun(sandbox, instance, recipe, evaluation, request)


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
    """The official run and the flaky re-runs."""
    evaluation = _evaluated(sandbox, instance, recipe, patch, request)
    return _rerun(sandbox, instance, recipe, evaluation, request)


def _rerun(
    sandbox: Sandbox, instance: Instance, recipe: Recipe, evaluation: Evaluation,
    request: GradingRequest,
) -> Evaluation:  # fmt: skip
    """``evaluation`` with the tests that decided it against the patch run again."""
    reruns = rerun_deciding(
        sandbox, instance, recipe, evaluation, timeout=request.timeout,
        times=request.flaky_reruns, test_user=request.test_user, writable=request.writable,
        log_dir=request.log_dir,
    )  # fmt: skip
    if reruns.runs:
        evaluation.flaky_tests, evaluation.rerun_seconds = reruns.flaky, reruns.seconds
        evaluation.logs["flaky_reruns"] = "flaky_reruns.log"
    return evaluation
