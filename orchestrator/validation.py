"""Environment validation: before a participant sees an instance, prove the environment can
run its tests. With ``test_patch`` alone the FAIL_TO_PASS tests must fail; with the gold patch
they must pass. PASS_TO_PASS tests that fail even with the gold patch (network tests and the
like) are recorded and left out of the instance's grading. Each check runs in a throwaway
container from the instance image, never in the participant's.

Outcomes are cached per instance image under ``data_dir/validation``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from pydantic import BaseModel, Field

from .context import RunContext
from .evaluation import TEST_USER, TestRun, run_tests
from .grading import grade_tests
from .models import Instance
from .patch_apply import apply_patch
from .recipes import Recipe


class Validation(BaseModel):
    ok: bool
    message: str = ""
    excluded_p2p: list[str] = Field(default_factory=list)
    f2p_passing_at_base: list[str] = Field(default_factory=list)
    duration: float = 0.0
    cached: bool = False


def _cache_path(ctx: RunContext, instance_image: str) -> Path:
    tag = instance_image.rsplit(":", 1)[-1]
    return ctx.settings.data_dir / "validation" / f"{tag}.json"


def validate_instance(
    ctx: RunContext, instance: Instance, instance_image: str, recipe: Recipe
) -> Validation:
    """Run the base and gold checks (or return the cached outcome)."""
    cache = _cache_path(ctx, instance_image)
    if cache.exists():
        return Validation.model_validate_json(cache.read_text()).model_copy(update={"cached": True})
    started = time.monotonic()
    timeout = ctx.settings.test_timeout
    out_dir = ctx.instance_dir(instance)

    user = TEST_USER if ctx.settings.unprivileged_tests else None
    sandbox = ctx.start_sandbox(instance_image, instance, "validation", network=False)
    try:
        base = run_tests(sandbox, instance, recipe, timeout=timeout, test_user=user)
    finally:
        sandbox.remove()
    (out_dir / "validation_base_output.txt").write_text(base.output)

    sandbox = ctx.start_sandbox(instance_image, instance, "validation", network=False)
    try:
        applied = apply_patch(sandbox, instance.patch, fuzz=ctx.settings.patch_fuzz)
        gold = (
            run_tests(sandbox, instance, recipe, timeout=timeout, test_user=user)
            if applied.applied
            else None
        )
    finally:
        sandbox.remove()
    if gold is not None:
        (out_dir / "validation_gold_output.txt").write_text(gold.output)

    result = _judge(instance, base, applied.applied, applied.error, gold)
    result.duration = time.monotonic() - started
    cache.parent.mkdir(parents=True, exist_ok=True)
    if result.ok:
        cache.write_text(result.model_dump_json())
    return result


def _judge(
    instance: Instance, base: TestRun, gold_applied: bool, apply_error: str, gold: TestRun | None
) -> Validation:
    if base.timed_out or (gold is not None and gold.timed_out):
        return Validation(ok=False, message="the tests timed out during validation")
    for name, run in (("at the base commit", base), ("with the gold patch", gold)):
        if run is not None and run.forged:
            return Validation(ok=False, message=f"the test output {name} is unusable: {run.forged}")
    if base.crash:
        return Validation(ok=False, message=f"tests do not run at the base commit: {base.crash}")
    if not gold_applied:
        return Validation(ok=False, message=f"the gold patch does not apply: {apply_error}")
    assert gold is not None
    if gold.crash:
        return Validation(ok=False, message=f"tests do not run with the gold patch: {gold.crash}")
    at_base = grade_tests(instance.FAIL_TO_PASS, instance.PASS_TO_PASS, base.outcomes)
    with_gold = grade_tests(instance.FAIL_TO_PASS, instance.PASS_TO_PASS, gold.outcomes)
    if with_gold.fail_to_pass_failed:
        names = ", ".join(with_gold.fail_to_pass_failed[:5])
        return Validation(
            ok=False, message=f"FAIL_TO_PASS tests fail even with the gold patch: {names}"
        )
    if at_base.fail_to_pass_passed:
        names = ", ".join(at_base.fail_to_pass_passed[:5])
        return Validation(
            ok=False,
            message=f"FAIL_TO_PASS tests pass without any fix: {names}",
            f2p_passing_at_base=at_base.fail_to_pass_passed,
        )
    excluded = with_gold.pass_to_pass_failed
    note = f"{len(excluded)} PASS_TO_PASS test(s) fail with the gold patch and are left out" * bool(
        excluded
    )
    return Validation(ok=True, message=note, excluded_p2p=excluded)


def save_validation(path: Path, validation: Validation) -> None:
    path.write_text(json.dumps(validation.model_dump(), indent=1))
