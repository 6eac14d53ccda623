"""The wider run of one instance in a run: a fresh container of the instance image, the
official run's options (:mod:`orchestrator.grading.wider`)."""

from __future__ import annotations

from orchestrator.context.run_context import RunContext
from orchestrator.context.successor import successor
from orchestrator.diffs.diff import Patch
from orchestrator.grading.wider import (
    WiderBaseline,
    WiderOptions,
    tampered,
    wider_check,
    without_baseline,
)
from orchestrator.models import Instance, InstanceResult, WiderCheck
from orchestrator.recipes.recipe import Recipe
from orchestrator.sandbox import SandboxError, Snapshot
from sandbox_tools.contract import TEST_USER


def widen(
    result: InstanceResult, ctx: RunContext, instance: Instance, snapshot: Snapshot,
    recipe: Recipe, patch: Patch, baseline: WiderBaseline | None, writable: list[str],
    excluded: tuple[list[str], list[str]],
) -> None:  # fmt: skip
    """``result`` (a resolved verdict) with its wider check (:func:`run_wider`); when the
    audit hook saw the patch's code act there, the verdict is ``tamper_detected``
    (:func:`~orchestrator.grading.wider.tampered`; ``excluded``: the tests validation left
    out)."""
    try:
        result.wider = run_wider(ctx, instance, snapshot, recipe, patch, baseline, writable)
    except SandboxError as exc:  # a second opinion never fails the instance
        result.wider = WiderCheck(why_not=f"the wider run failed: {exc}"[:500])
        return
    caught = tampered(instance, result.wider, excluded)
    if caught is not None and caught.groups is not None:
        result.status, result.reason, result.message = caught.status, caught.reason, caught.message
        result.tests, result.tamper_evidence = caught.groups, caught.tamper_evidence


def run_wider(
    ctx: RunContext, instance: Instance, snapshot: Snapshot, recipe: Recipe, patch: Patch,
    baseline: WiderBaseline | None, writable: list[str],
) -> WiderCheck:  # fmt: skip
    """The wider check of ``patch`` in a fresh ``wider`` container from ``snapshot``, removed
    afterwards; its logs under the instance directory's ``wider/``."""
    grading = ctx.settings.grading
    options = WiderOptions(
        timeout=grading.test_timeout, fuzz=grading.patch_fuzz,
        test_user=TEST_USER if grading.unprivileged_tests else None,
        writable=tuple(writable), max_files=grading.wider_max_files,
        log_dir=ctx.instance_dir(instance) / "wider",
    )  # fmt: skip
    missing = without_baseline(baseline)
    if missing is not None or baseline is None:
        return missing or WiderCheck()
    sandbox = ctx.start_sandbox(snapshot, instance, "wider", network=False)
    try:
        return wider_check(
            sandbox, instance, recipe, patch, baseline, options, successor(ctx, instance, "wider")
        )
    finally:
        sandbox.remove()
