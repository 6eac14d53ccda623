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

from orchestrator.atomic import atomic_write_text, read_cached
from orchestrator.environments.recipes import Recipe
from orchestrator.environments.reinstall import reinstall_after_patch
from orchestrator.grading.classify import grade_tests
from orchestrator.grading.evaluation import TEST_USER, TestRun, run_tests
from orchestrator.grading.network_tests import network_failures
from orchestrator.models import Instance, TestStatus
from orchestrator.patches.apply import apply_patch
from orchestrator.run.context import RunContext
from orchestrator.sandbox.file_snapshot import FileSnapshot

# crashes at the base that the bug cannot explain (evaluation.run_tests, detect_test_crash):
# the test patch did not apply, the command did not finish, printed nothing or far too much
_SETUP_CRASHES = (
    "the test patch does not apply",
    "the test output lacks the start/end markers",
    "the test command printed nothing",
    "the test output is larger than",
)


class Validation(BaseModel):
    ok: bool
    message: str = ""
    excluded_p2p: list[str] = Field(default_factory=list)  # left out of grading (flaky too)
    # FAIL_TO_PASS tests left out of grading: they need the internet (network_tests.py)
    excluded_f2p: list[str] = Field(default_factory=list)
    flaky: list[str] = Field(default_factory=list)  # outcome differed between gold runs
    # where the tests wrote in the repository, at the base and with the gold patch (failing
    # tests may write what passing ones do not): writable in grading (grading.script)
    writable: list[str] = Field(default_factory=list)
    f2p_passing_at_base: list[str] = Field(default_factory=list)
    duration: float = 0.0
    cached: bool = False


def _cache_path(ctx: RunContext, instance_image: str | FileSnapshot) -> Path:
    # one outcome per way of running the tests: how many gold runs, and as which user
    name = instance_image.name if isinstance(instance_image, FileSnapshot) else instance_image
    tag = name.rsplit(":", 1)[-1]
    runs = ctx.settings.environment.validation_runs
    suffix = ("" if runs == 1 else f"-r{runs}") + (
        "-uw" if ctx.settings.grading.unprivileged_tests else ""
    )
    return ctx.settings.storage.data_dir / "validation" / f"{tag}{suffix}.json"


def cached_validation(path: Path) -> Validation | None:
    """The validation cached at ``path``; None when there is none or it cannot be read (an
    empty or truncated file: a warning, and the instance is validated again)."""
    return read_cached(path, Validation.model_validate_json, "validation")


def validate_instance(
    ctx: RunContext, instance: Instance, instance_image: str | FileSnapshot, recipe: Recipe
) -> Validation:
    """Run the base and gold checks (or return the cached outcome)."""
    cache = _cache_path(ctx, instance_image)
    cached = cached_validation(cache)
    if cached is not None:
        return cached.model_copy(update={"cached": True})
    started = time.monotonic()
    timeout = ctx.settings.grading.test_timeout
    out_dir = ctx.instance_dir(instance)

    user = TEST_USER if ctx.settings.grading.unprivileged_tests else None
    sandbox = ctx.start_sandbox(instance_image, instance, "validation", network=False)
    try:
        base = run_tests(sandbox, instance, recipe, timeout=timeout, test_user=user, record=True)
    finally:
        sandbox.remove()
    (out_dir / "validation_base_output.txt").write_text(base.output)

    sandbox = ctx.start_sandbox(instance_image, instance, "validation", network=False)
    try:
        applied = apply_patch(sandbox, instance.patch, fuzz=ctx.settings.grading.patch_fuzz)
        golds = []
        reinstalled = None
        if applied.applied:  # a gold patch that adds a dependency is installed again
            reinstalled = reinstall_after_patch(sandbox, recipe, instance.patch, timeout)
            if reinstalled is not None and not reinstalled[0]:
                applied = applied.model_copy(
                    update={"applied": False, "error": f"reinstall failed: {reinstalled[1]}"}
                )
        if applied.applied:  # the eval script restores the test files: it can run again
            for _ in range(ctx.settings.environment.validation_runs):
                golds.append(
                    run_tests(
                        sandbox, instance, recipe, timeout=timeout, test_user=user, record=True
                    )
                )
                if golds[-1].timed_out or golds[-1].crash:
                    break
    finally:
        sandbox.remove()
    gold = golds[0] if golds else None
    for number, run in enumerate(golds, 1):
        suffix = "" if number == 1 else f"_{number}"
        (out_dir / f"validation_gold_output{suffix}.txt").write_text(run.output)

    result = _judge(instance, base, applied.applied, applied.error, gold, recipe.log_format)
    flaky = flaky_tests([run.outcomes for run in golds])
    if result.ok and flaky:
        result = _with_flaky(instance, result, flaky)
    result.writable = sorted({path for run in [base, *golds] for path in run.writable})
    result.duration = time.monotonic() - started
    cache.parent.mkdir(parents=True, exist_ok=True)
    if result.ok:
        atomic_write_text(cache, result.model_dump_json())
    return result


def _judge(
    instance: Instance,
    base: TestRun,
    gold_applied: bool,
    apply_error: str,
    gold: TestRun | None,
    log_format: str = "pytest",
) -> Validation:
    if base.timed_out or (gold is not None and gold.timed_out):
        return Validation(ok=False, message="the tests timed out during validation")
    for name, run in (("at the base commit", base), ("with the gold patch", gold)):
        if run is not None and run.forged:
            return Validation(ok=False, message=f"the test output {name} is unusable: {run.forged}")
    if base.crash and (base.crash.startswith(_SETUP_CRASHES) or not gold_applied):
        return Validation(ok=False, message=f"tests do not run at the base commit: {base.crash}")
    if not gold_applied:
        return Validation(ok=False, message=f"the gold patch does not apply: {apply_error}")
    assert gold is not None
    if gold.crash:
        return Validation(ok=False, message=f"tests do not run with the gold patch: {gold.crash}")
    # a run that crashes at the base but not with the gold patch: the bug itself crashed the
    # runner (django's unittest runner printing a failing subtest's parameters, say); the
    # FAIL_TO_PASS tests it did not report count as failing, as in SWE-bench's harness
    with_gold = grade_tests(instance.FAIL_TO_PASS, instance.PASS_TO_PASS, gold.outcomes)
    failed = with_gold.fail_to_pass_failed
    offline = network_failures(log_format, gold.section or "", failed)
    if failed and (offline != failed or not with_gold.fail_to_pass_passed):
        names = ", ".join(failed[:5])
        why = " (they need the internet)" if offline == failed else ""
        return Validation(
            ok=False, message=f"FAIL_TO_PASS tests fail even with the gold patch{why}: {names}"
        )
    at_base = grade_tests(
        instance.FAIL_TO_PASS, instance.PASS_TO_PASS, base.outcomes, excluded_f2p=offline
    )
    if at_base.fail_to_pass_passed and not at_base.fail_to_pass_failed:
        # nothing to fix here: an empty patch would resolve the instance
        names = ", ".join(at_base.fail_to_pass_passed[:5])
        return Validation(
            ok=False,
            message=f"FAIL_TO_PASS tests pass without any fix: {names}",
            f2p_passing_at_base=at_base.fail_to_pass_passed,
        )
    excluded = with_gold.pass_to_pass_failed
    notes = []
    if offline:
        notes.append(
            f"{len(offline)} of {len(instance.FAIL_TO_PASS)} FAIL_TO_PASS test(s) need the "
            "internet and are left out"
        )
    if excluded:
        notes.append(
            f"{len(excluded)} PASS_TO_PASS test(s) fail with the gold patch and are left out"
        )
    if base.crash:
        notes.append(f"the tests crash at the base commit (the bug): {base.crash}")
    if at_base.fail_to_pass_passed:
        # SWE-bench saw them fail at the base (often a flaky network call); some others still
        # fail here, so the instance tells a fix from none
        notes.append(
            f"{len(at_base.fail_to_pass_passed)} of {len(instance.FAIL_TO_PASS)} FAIL_TO_PASS "
            "test(s) already pass at the base"
        )
    return Validation(
        ok=True,
        message="; ".join(notes),
        excluded_p2p=excluded,
        excluded_f2p=offline,
        f2p_passing_at_base=at_base.fail_to_pass_passed,
    )


def flaky_tests(runs: list[dict[str, TestStatus]]) -> list[str]:
    """Tests whose outcome is not the same in every run (a test missing from a run counts)."""
    if len(runs) < 2:
        return []
    names = sorted(set().union(*runs))
    return [name for name in names if len({run.get(name) for run in runs}) > 1]


def _with_flaky(instance: Instance, result: Validation, flaky: list[str]) -> Validation:
    """A valid outcome with its flaky tests left out; flaky FAIL_TO_PASS tests invalidate it."""
    f2p = [name for name in instance.FAIL_TO_PASS if name in set(flaky)]
    if f2p:
        return Validation(
            ok=False,
            message=f"FAIL_TO_PASS tests are flaky with the gold patch: {', '.join(f2p[:5])}",
            flaky=flaky,
        )
    p2p = [name for name in instance.PASS_TO_PASS if name in set(flaky)]
    excluded = sorted(set(result.excluded_p2p) | set(p2p))
    note = f"{len(excluded)} PASS_TO_PASS test(s) left out ({len(p2p)} flaky)"
    return result.model_copy(update={"excluded_p2p": excluded, "flaky": p2p, "message": note})


def save_validation(path: Path, validation: Validation) -> None:
    atomic_write_text(path, json.dumps(validation.model_dump(), indent=1))
