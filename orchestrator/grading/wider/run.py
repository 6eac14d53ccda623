"""The wider run of one instance in a run: a fresh container of the instance image, the
official run's options (:mod:`orchestrator.grading.wider`)."""

from __future__ import annotations

from orchestrator.context.run_context import RunContext
from orchestrator.context.successor import successor
from orchestrator.diffs.diff import Patch
from orchestrator.grading.wider import WiderBaseline, WiderOptions, wider_check, without_baseline
from orchestrator.models import Instance, WiderCheck
from orchestrator.recipes.recipe import Recipe
from orchestrator.sandbox import Snapshot
from sandbox_tools.contract import TEST_USER


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
