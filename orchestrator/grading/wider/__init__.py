"""The wider run: a second opinion beside a ``resolved`` verdict, never in place of it.

After the official run, in a fresh container of the instance image, the patch is applied
and installed again as grading does (the build guard, the contained reinstall), and the
repository's test modules that exercise what it changed (:mod:`.scope`) run through phase
7's entry with grading's runner, user, writable paths, limits, network off and audit hook.
Their outcomes are compared with the gold patch's two runs of the same modules at validation
(:class:`WiderBaseline`, :mod:`orchestrator.validation.wider`; :mod:`.compare`): the tests
that pass with gold and fail with the patch are the regressions beyond the task's tests; the
tests whose outcome differs from gold's either way and that exercise a function the gold
patch changes (:mod:`.reach`, read at the base commit before the patch is applied) are
listed apart.
Forged output, a crash or a timeout of the wider run make it say why it could not compare;
the verdict stays the official one. Evidence the audit hook sees there is evidence of
grading, as in the official run: every test counts as failing (:func:`tampered`).
"""

from __future__ import annotations

import time
from pathlib import Path

from pydantic import BaseModel, Field

from orchestrator.context.successor import Successor
from orchestrator.diffs.diff import Patch
from orchestrator.grading import GradingRequest, grade
from orchestrator.grading.classify import classify, grade_tests
from orchestrator.grading.evaluation import Evaluation
from orchestrator.grading.wider.compare import compare, stable_baseline
from orchestrator.grading.wider.index import read_sources
from orchestrator.grading.wider.reach import Reach, gold_functions, reach_of
from orchestrator.grading.wider.scope import RepoIndex, changed_modules, select_scope
from orchestrator.models import CaseStatus, Instance, Reason, WiderCheck
from orchestrator.recipes.recipe import Recipe, directives_of, django_test_label, touched_test_files
from orchestrator.sandbox import Sandbox

__all__ = [
    "WiderBaseline", "WiderOptions", "as_directives", "tampered", "wider_check",
    "without_baseline",
    "EMPTY_SCOPE",
    "NOTHING_BEYOND",
]  # fmt: skip


class WiderBaseline(BaseModel):
    """The gold patch's wider run at validation, kept with its record: the repository's
    ``index`` (what the scope reads), the gold patch's scope (``files``, ``scope``,
    ``cut``), the outcomes of its two runs (``runs``) and their ``seconds``; ``why_not``:
    why there is none (no test module in scope, the runs crashed); ``unrunnable``: the
    modules of the scope that cannot be collected here, left out of every wider run."""

    index: RepoIndex = Field(default_factory=RepoIndex)
    files: list[str] = Field(default_factory=list)
    scope: dict[str, str] = Field(default_factory=dict)
    cut: int = 0
    runs: list[dict[str, CaseStatus]] = Field(default_factory=list)
    seconds: list[float] = Field(default_factory=list)
    why_not: str = ""
    # test modules of the scope pytest could not collect with gold: never run
    unrunnable: list[str] = Field(default_factory=list)


class WiderOptions(BaseModel):
    """Grading's options for the wider run (its runner, user and limits are the official
    run's): ``max_files``: the scope's cap."""

    timeout: float
    fuzz: int = 3
    test_user: str | None = None
    writable: tuple[str, ...] = ()
    max_files: int = 40
    log_dir: Path | None = None


def as_directives(instance: Instance, files: list[str]) -> list[str]:
    """What the runner takes for ``files``: the paths, or django's test labels."""
    if instance.repo == "django/django":
        return [django_test_label(path) for path in files]
    return list(files)


def task_test_files(instance: Instance) -> list[str]:
    """The task's own test files (the official run ran them): left out of the wider set."""
    return touched_test_files(instance.test_patch) + directives_of(instance)


# a gold patch whose scope holds no test module but the task's own (requests: one test module)
EMPTY_SCOPE = "no test module beyond the task's imports the gold patch's modules"
NOTHING_BEYOND = "nothing beyond the task's tests"


def without_baseline(baseline: WiderBaseline | None) -> WiderCheck | None:
    """The check of a patch whose instance has no usable gold baseline (None: it has one)."""
    if baseline is None:
        return WiderCheck(why_not="validation holds no wider baseline (validation is off)")
    if baseline.why_not == EMPTY_SCOPE:  # the task's tests are all the tests there are
        return WiderCheck(why_not=f"{NOTHING_BEYOND}: {EMPTY_SCOPE}")
    if baseline.why_not:
        return WiderCheck(why_not=f"no gold baseline: {baseline.why_not}")
    return None


def wider_check(
    sandbox: Sandbox, instance: Instance, recipe: Recipe, patch: Patch,
    baseline: WiderBaseline, options: WiderOptions, successor: Successor | None,
) -> WiderCheck:  # fmt: skip
    """The wider run of ``patch`` in ``sandbox`` (a fresh container of the instance image)
    against ``baseline`` (:func:`without_baseline` first)."""
    own = select_scope(
        patch.paths, baseline.index, exclude=task_test_files(instance),
        max_files=options.max_files,
    )  # fmt: skip
    left_out = set(baseline.unrunnable)
    files = [f for f in dict.fromkeys([*baseline.files, *own.files]) if f not in left_out]
    scope = {**own.why, **baseline.scope}
    started = time.monotonic()
    reach, functions = _gold_reach(sandbox, instance, files)
    request = GradingRequest(
        timeout=options.timeout, fuzz=options.fuzz, log_dir=options.log_dir,
        test_user=options.test_user, writable=options.writable, successor=successor,
        directives=tuple(as_directives(instance, files)),
    )  # fmt: skip
    evaluation = grade(sandbox, instance, recipe, patch, request)
    check = WiderCheck(
        files=files, scope=scope, cut=own.cut + baseline.cut,
        seconds=round(time.monotonic() - started, 3), gold_functions=functions,
    )  # fmt: skip
    why = _why_not_compared(evaluation)
    run = evaluation.test_run
    if why or run is None:
        update = {"why_not": why or "no test ran", "tamper_evidence": evaluation.tamper_evidence}
        return check.model_copy(update=update)
    reported = set().union(*baseline.runs) if baseline.runs else set()
    task = [*instance.FAIL_TO_PASS, *instance.PASS_TO_PASS]
    found = compare(
        stable_baseline(baseline.runs), reported, run.outcomes, task, run.section or "",
        exercises=reach.covers,
    )  # fmt: skip
    return check.model_copy(
        update={
            "ran": True, "compared": found.compared, "exercising": found.exercising,
            "left_out": found.left_out,
            "no_baseline": found.no_baseline, "regressions": found.regressions,
            "differs": found.differs,
        }
    )  # fmt: skip


def _gold_reach(sandbox: Sandbox, instance: Instance, files: list[str]) -> tuple[Reach, list[str]]:
    """The tests of ``files`` that exercise what the gold patch changes, and its functions
    (:mod:`.reach`), read at the base commit in ``sandbox`` before the patch is applied."""
    gold = Patch.parse(instance.patch)
    modules = changed_modules(gold.paths)
    sources = read_sources(sandbox, list(dict.fromkeys([*modules, *files])))
    functions = gold_functions(gold, _some(sources, modules))
    return reach_of(_some(sources, files), functions), functions


def _some(sources: dict[str, str], paths: list[str]) -> dict[str, str]:
    return {path: sources[path] for path in paths if path in sources}


def tampered(
    instance: Instance, check: WiderCheck, excluded: tuple[list[str], list[str]]
) -> Evaluation | None:
    """The verdict when the audit hook saw the patch's code act in the wider run (as in the
    official run: every expected test counts as failing, reason ``tamper_detected``;
    ``excluded``: the PASS_TO_PASS and FAIL_TO_PASS tests validation left out); None when
    it saw nothing."""
    evidence = check.tamper_evidence
    if not evidence:
        return None
    groups = grade_tests(instance.FAIL_TO_PASS, instance.PASS_TO_PASS, {}, *excluded)
    message = "the patch's code tampered with the wider run of the repository's tests, "
    message += "every test counts as failing: " + "; ".join(evidence[:5])
    return Evaluation(
        status=classify(groups), reason=Reason.TAMPER_DETECTED, message=message,
        groups=groups, tamper_evidence=evidence,
    )  # fmt: skip


def _why_not_compared(evaluation: Evaluation) -> str:
    """Why the wider run's outcomes cannot be compared ("" when they can)."""
    untrusted = {Reason.TAMPER_DETECTED, Reason.TEST_OUTPUT_FORGED, Reason.TEST_TIMEOUT}
    if evaluation.reason in untrusted or evaluation.test_run is None:
        return f"{evaluation.reason.value}: {evaluation.message}"[:500]
    if evaluation.reason == Reason.TEST_CRASH:
        return f"test_crash: {evaluation.message}"[:500]
    return ""
