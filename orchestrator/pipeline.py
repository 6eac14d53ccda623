"""The seven phases for one instance, joined: ``run_instance`` always returns a result.

1-4  prepare_instance (environment.py): checkout, setup, dependencies, base commit + hygiene
 +   validate_instance (validation.py): the environment can run the instance's tests
5    run_participant (participant_client.py): the participant works in its own container
6    the patch: from the answer, else the container's diff; hidden test files dropped
7    evaluate (evaluation.py): apply, run the tests with the network off, parse, classify
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Callable

import structlog

from .context import RunContext
from .environment import PreparedInstance, SetupFailed, prepare_instance
from .errors import SandboxError, UserError
from .evaluation import TEST_USER, evaluate
from .housekeeping import keep_stopped
from .models import Instance, InstanceResult, Reason, Status
from .participant_client import ParticipantLimits, run_participant, sandbox_tool_runner
from .patch_extract import ContainerDiffError, container_diff, drop_files, extract_patch
from .recipes import Recipe, test_files
from .safe_git import SHELL_GIT_FUNCTION
from .sandbox import DiskLimitExceeded, Sandbox
from .tools_host import install_tools
from .validation import validate_instance

PhaseCallback = Callable[[str, str], None]  # (instance_id, phase)


class _Failed(Exception):
    def __init__(self, reason: Reason, message: str, container: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.container = container


class _Graded(Exception):
    """Ends the instance with a grade reached before the tests (e.g. no patch to take)."""

    def __init__(self, status: Status, reason: Reason, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason


def test_recipe(prepared: PreparedInstance) -> Recipe:
    """The recipe that says how to run the tests (the LLM's test command if no recipe)."""
    if prepared.plan.recipe is not None:
        return prepared.plan.recipe
    return Recipe(
        repo="",
        version="",
        python=prepared.plan.python,
        install="",
        test_cmd=prepared.test_cmd or "pytest -rA",
        log_format="pytest",
    )


async def run_instance(
    ctx: RunContext,
    instance: Instance,
    participant_url: str,
    on_phase: PhaseCallback | None = None,
) -> InstanceResult:
    """Run phases 1-7 for ``instance``; errors become an ``error`` result, never an exception."""
    # every log line of this task (and its threads) carries the run and the instance
    structlog.contextvars.bind_contextvars(run_id=ctx.run_id, instance_id=instance.instance_id)
    log = ctx.instance_log(instance)
    out_dir = ctx.instance_dir(instance)
    timings: dict[str, float] = {}
    result = InstanceResult(
        instance_id=instance.instance_id, repo=instance.repo, status=Status.ERROR
    )
    started = time.monotonic()
    participant: Sandbox | None = None
    prepared: PreparedInstance | None = None

    def phase(name: str) -> None:
        log.info("phase", phase=name)
        if on_phase:
            on_phase(instance.instance_id, name)

    try:
        phase("setup")
        try:
            prepared = await asyncio.to_thread(prepare_instance, ctx, instance)
        except SetupFailed as exc:
            raise _Failed(Reason.ENVIRONMENT, str(exc), exc.container) from exc
        timings.update(prepared.timings)
        result.setup_tokens = prepared.setup_tokens
        if prepared.plan.recipe is not None:
            result.python_spec = prepared.plan.recipe.python
        result.python_used = prepared.python_used or prepared.plan.python
        result.logs["setup"] = "setup.log"
        recipe = test_recipe(prepared)

        excluded_p2p: list[str] = []
        excluded_f2p: list[str] = []
        if ctx.settings.validate_env:
            phase("validation")
            t = time.monotonic()
            check = await asyncio.to_thread(
                validate_instance, ctx, instance, prepared.instance_image, recipe
            )
            timings["validation"] = time.monotonic() - t
            if not check.ok:
                raise _Failed(Reason.ENVIRONMENT, f"environment validation: {check.message}")
            excluded_p2p, excluded_f2p = check.excluded_p2p, check.excluded_f2p

        phase("participant")
        t = time.monotonic()
        participant = await asyncio.to_thread(
            ctx.start_sandbox, prepared.instance_image, instance, "participant", network=False
        )
        result.container = participant.name
        await asyncio.to_thread(install_tools, participant)
        outcome = await run_participant(
            participant_url,
            instance,
            sandbox_tool_runner(participant),
            ParticipantLimits.from_settings(ctx.settings),
            out_dir / "transcript.jsonl",
        )
        timings["participant"] = time.monotonic() - t
        result.tool_calls = outcome.tool_calls
        result.logs["transcript"] = "transcript.jsonl"
        if outcome.reason is not None:
            raise _Failed(outcome.reason, outcome.message or str(outcome.reason))

        phase("patch")
        # nothing the participant left running (a fork bomb, a loop rewriting files, a disk
        # writer) runs on while its diff is taken or its container grades; past the disk
        # budget this raises DiskLimitExceeded
        await asyncio.to_thread(participant.kill_processes)
        patch = extract_patch(outcome.final_text, outcome.final_data)
        if not patch:
            try:
                patch = await asyncio.to_thread(container_diff, participant, instance.base_commit)
            except ContainerDiffError as exc:
                # no process of the participant runs any more: its repository is broken
                raise _Graded(
                    Status.NO_OP,
                    Reason.EMPTY_PATCH,
                    f"no patch: the participant's answer holds none and its repository "
                    f"cannot be diffed ({exc})",
                ) from exc
        patch, dropped = drop_files(patch or "", set(test_files(instance.test_patch)))
        result.excluded_patch_files = dropped
        ctx.run_dir.write_text(instance.instance_id, "patch.diff", patch)
        result.logs["patch"] = "patch.diff"

        phase("grading")
        t = time.monotonic()
        if ctx.settings.grade_in_participant_container:
            await asyncio.to_thread(_reset_to_base, participant, instance)
            grader, own = participant, False
        else:
            grader = await asyncio.to_thread(
                ctx.start_sandbox, prepared.instance_image, instance, "grading", network=False
            )
            own = True
        try:
            evaluation = await asyncio.to_thread(
                evaluate, grader, instance, recipe, patch,
                timeout=ctx.settings.test_timeout, fuzz=ctx.settings.patch_fuzz,
                excluded_p2p=excluded_p2p, log_dir=out_dir, test_user=test_user(ctx),
                excluded_f2p=excluded_f2p,
            )  # fmt: skip
        finally:
            if own:
                await asyncio.to_thread(grader.remove)
        timings["grading"] = time.monotonic() - t
        if evaluation.test_run is not None:
            timings["tests"] = evaluation.test_run.duration
        result.status = evaluation.status
        result.reason = evaluation.reason or Reason.NONE
        result.apply_strategy = evaluation.apply.strategy if evaluation.apply else None
        if evaluation.groups is not None:
            result.tests = evaluation.groups
        result.excluded_patch_files += evaluation.excluded_files
        result.suspicious = evaluation.suspicious
        result.logs.update(evaluation.logs)
        result.message = evaluation.message
    except _Failed as exc:
        result.status, result.reason, result.message = Status.ERROR, exc.reason, str(exc)
        result.container = exc.container or result.container
    except _Graded as exc:
        result.status, result.reason, result.message = exc.status, exc.reason, str(exc)
    except DiskLimitExceeded as exc:
        result.status, result.reason, result.message = Status.ERROR, Reason.DISK_LIMIT, str(exc)
    except (SandboxError, UserError) as exc:
        result.status, result.reason, result.message = Status.ERROR, Reason.INFRASTRUCTURE, str(exc)
    except asyncio.CancelledError:
        result.status, result.reason, result.message = Status.ERROR, Reason.CANCELLED, "cancelled"
        _dispose(ctx, participant, keep=False)
        if prepared is not None:
            prepared.discard()
        raise
    except Exception as exc:  # noqa: BLE001 - one instance must never stop the others
        log.error("instance.crash", error=repr(exc))
        ctx.run_dir.write_text(instance.instance_id, "crash.txt", traceback.format_exc())
        result.status, result.reason = Status.ERROR, Reason.INFRASTRUCTURE
        result.message = f"internal error: {exc!r} (see crash.txt)"
    if prepared is not None:
        prepared.discard()
    timings["total"] = time.monotonic() - started
    result.timings = {k: round(v, 3) for k, v in timings.items()}
    keep = _should_keep(ctx, result)
    await asyncio.to_thread(_dispose, ctx, participant, keep)
    if not keep and participant is not None and result.container == participant.name:
        result.container = None
    log.info("instance.done", status=result.status, reason=result.reason)
    return result


def test_user(ctx: RunContext) -> str | None:
    """The user the tests run as: unprivileged when the settings ask for it, else root."""
    return TEST_USER if ctx.settings.unprivileged_tests else None


def _reset_to_base(sandbox: Sandbox, instance: Instance) -> None:
    sandbox.exec(
        f"{SHELL_GIT_FUNCTION}\ncd /testbed && git reset -q --hard {instance.base_commit} "
        "&& git clean -fdq",
        timeout=120,
    )


def _should_keep(ctx: RunContext, result: InstanceResult) -> bool:
    policy = ctx.settings.keep_containers
    return policy == "always" or (policy == "on_failure" and result.status != Status.RESOLVED)


def _dispose(ctx: RunContext, sandbox: Sandbox | None, keep: bool) -> None:
    """Remove the participant's container, or stop it and keep it for ``swe-green inspect``."""
    if sandbox is None:
        return
    try:
        if keep:
            keep_stopped(sandbox)
        else:
            sandbox.remove()
    except Exception as exc:  # noqa: BLE001 - cleanup must not hide the result
        ctx.log.warning("container.cleanup_failed", container=sandbox.name, error=str(exc))
