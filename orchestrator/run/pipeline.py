"""The seven phases for one instance, joined: ``run_instance`` always returns a result.

1-4  prepare_instance (environments/build.py): checkout, setup, dependencies, base commit
 +   validate_instance (environments/validation.py): the environment can run the tests
5    run_participant (participant/client.py): the participant works in its own container
6    the patch (patches/): from the answer, else the container's diff; test files dropped
7    evaluate (grading/evaluation.py): apply, run the tests with the network off, classify
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

import structlog

from orchestrator.context.run_context import RunContext
from orchestrator.context.successor import successor
from orchestrator.environments.build import prepare_instance
from orchestrator.environments.prepared import PreparedInstance, test_recipe
from orchestrator.environments.setup.bytecode import drop_manifest_command
from orchestrator.environments.setup.plan import SetupFailed
from orchestrator.errors import SandboxError, UserError
from orchestrator.grading.evaluation import TEST_USER, Evaluation, evaluate
from orchestrator.grading.failure_labels import label_of
from orchestrator.housekeeping.kept import keep_stopped, room_to_keep
from orchestrator.models import Instance, InstanceResult, Reason, Status
from orchestrator.participant.client import (
    ParticipantLimits,
    ParticipantOutcome,
    run_participant,
)
from orchestrator.participant.predictions import Predictions
from orchestrator.participant.tools_host import sandbox_tool_runner
from orchestrator.patches.container_diff import ContainerDiffError, container_diff
from orchestrator.patches.diff import drop_files
from orchestrator.patches.extract import extract_patch
from orchestrator.run.flaky_check import rerun_deciding
from orchestrator.run.grading_container import GradingContainer, wait_through_cancels
from orchestrator.safe_git import SHELL_GIT_FUNCTION
from orchestrator.sandbox import DiskLimitExceeded, Sandbox
from orchestrator.spec.recipes import test_files
from orchestrator.validation.validation import validate_instance

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


@dataclass(frozen=True)
class Excluded:
    """Tests validation found this environment cannot pass, left out of grading."""

    p2p: list[str] = field(default_factory=list)
    f2p: list[str] = field(default_factory=list)
    writable: list[str] = field(default_factory=list)  # where the gold run's tests wrote


async def run_instance(
    ctx: RunContext,
    instance: Instance,
    participant_url: str | Predictions,
    on_phase: PhaseCallback | None = None,
) -> InstanceResult:
    """Run phases 1-7 for ``instance``; errors become an ``error`` result, never an exception.

    With :class:`Predictions` instead of a participant's URL, phase 5 is skipped: the patch is
    the prediction's (phase 6 drops the hidden test files from it as from any patch)."""
    # every log line of this task (and its threads) carries the run and the instance
    structlog.contextvars.bind_contextvars(run_id=ctx.run_id, instance_id=instance.instance_id)
    run = _InstanceRun(ctx, instance, on_phase)
    try:
        prepared = await run.set_up()  # phases 1-4
        excluded = await run.validate(prepared)  # phase 4: the environment runs the tests
        if isinstance(participant_url, Predictions):
            patch = await run.predicted_patch(participant_url)  # phase 6, no phase 5
        else:
            outcome = await run.participant_works(prepared, participant_url)  # phase 5
            patch = await run.take_patch(outcome)  # phase 6
        await run.grade(prepared, patch, excluded)  # phase 7
    except asyncio.CancelledError:
        run.record(Status.ERROR, Reason.CANCELLED, "cancelled")
        _dispose(ctx, run.participant, keep=False)
        run.grader.drop_now()
        await run.grader.removed()
        run.discard()
        raise
    except Exception as exc:  # noqa: BLE001 - one instance must never stop the others
        run.record_failure(exc)
    return await run.finish()


class _InstanceRun:
    """One instance's way through the phases: what each phase adds to its result."""

    def __init__(self, ctx: RunContext, instance: Instance, on_phase: PhaseCallback | None):
        self.ctx, self.instance, self.on_phase = ctx, instance, on_phase
        self.log = ctx.instance_log(instance)
        self.out_dir = ctx.instance_dir(instance)
        self.timings: dict[str, float] = {}
        self.result = InstanceResult(
            instance_id=instance.instance_id, repo=instance.repo, status=Status.ERROR
        )
        self.started = time.monotonic()
        self.participant: Sandbox | None = None
        self.stopping: asyncio.Task[None] | None = None  # the participant's, after its answer
        self.prepared: PreparedInstance | None = None
        self.grader = GradingContainer(ctx, instance)

    def phase(self, name: str) -> None:
        self.log.info("phase", phase=name)
        if self.on_phase:
            self.on_phase(self.instance.instance_id, name)

    async def set_up(self) -> PreparedInstance:
        self.phase("setup")
        try:
            prepared = await asyncio.to_thread(prepare_instance, self.ctx, self.instance)
        except SetupFailed as exc:
            raise _Failed(Reason.ENVIRONMENT, str(exc), exc.container) from exc
        self.prepared = prepared
        result = self.result
        self.timings.update(prepared.timings)
        result.setup_tokens = prepared.setup_tokens
        if prepared.plan.recipe is not None:
            result.python_spec = prepared.plan.recipe.python
        result.python_used = prepared.python_used or prepared.plan.python
        result.logs["setup"] = "setup.log"
        return prepared

    async def validate(self, prepared: PreparedInstance) -> Excluded:
        """The tests left out of grading: PASS_TO_PASS and FAIL_TO_PASS (validation off:
        none)."""
        if not self.ctx.settings.validation.validate_env:
            return Excluded()
        self.phase("validation")
        t = time.monotonic()
        check = await asyncio.to_thread(
            validate_instance, self.ctx, self.instance, prepared.snapshot,
            test_recipe(prepared),
        )  # fmt: skip
        self.timings["validation"] = time.monotonic() - t
        if not check.ok:
            raise _Failed(Reason.ENVIRONMENT, f"environment validation: {check.message}")
        return Excluded(p2p=check.excluded_p2p, f2p=check.excluded_f2p, writable=check.writable)

    async def participant_works(
        self, prepared: PreparedInstance, participant_url: str
    ) -> ParticipantOutcome:
        self.phase("participant")
        t = time.monotonic()
        if not self.ctx.settings.grading.grade_in_participant_container:
            # phase 7's fresh container starts beside the participant's: it idles until the
            # patch is taken and owes nothing to what the participant does
            self.grader.start_ahead(prepared.snapshot)
        self.participant = participant = await asyncio.to_thread(
            self.ctx.start_sandbox, prepared.snapshot, self.instance, "participant",
            network=False,
        )  # fmt: skip
        self.result.container = participant.name
        await self.grader.started()  # both containers are up before the participant is asked
        # the tools program is copied in at the first tool call (a participant that answers
        # with its patch, or a predictions file, makes none)
        outcome = await run_participant(
            participant_url,
            self.instance,
            sandbox_tool_runner(participant),
            ParticipantLimits.from_settings(self.ctx.settings.participant),
            self.out_dir / "transcript.jsonl",
        )
        self.timings["participant"] = time.monotonic() - t
        self.result.tool_calls = outcome.tool_calls
        self.result.logs["transcript"] = "transcript.jsonl"
        if outcome.reason is not None:
            raise _Failed(outcome.reason, outcome.message or str(outcome.reason))
        return outcome

    async def take_patch(self, outcome: ParticipantOutcome) -> str:
        """The patch from the answer, else the container's diff; hidden test files dropped."""
        self.phase("patch")
        participant, instance = self.participant, self.instance
        assert participant is not None
        # nothing the participant left running (a fork bomb, a loop rewriting files, a disk
        # writer) runs on while its diff is taken or its container grades; past the disk
        # budget this raises DiskLimitExceeded. With the patch in the answer and grading in
        # a fresh container, the participant's container is only stopped (not started again)
        patch = extract_patch(outcome.final_text, outcome.final_data)
        if patch and not self.in_participant_container():
            participant.check_disk()
            # stopped while grading goes on in its own container (the kill is sent at once;
            # the engine's wait for the exit is off the instance's path); finish waits for it
            self.stopping = asyncio.create_task(
                asyncio.to_thread(_stop_quietly, self.ctx, participant)
            )
            return self._kept_patch(patch)
        await asyncio.to_thread(participant.kill_processes)
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
        return self._kept_patch(patch or "")

    async def predicted_patch(self, predictions: Predictions) -> str:
        """The predictions file's patch for this instance (empty when it has none)."""
        self.phase("patch")
        return self._kept_patch(predictions.patches.get(self.instance.instance_id) or "")

    def _kept_patch(self, patch: str) -> str:
        """``patch`` without the hidden test files, written to ``patch.diff``."""
        instance = self.instance
        patch, dropped = drop_files(patch, set(test_files(instance.test_patch)))
        self.result.excluded_patch_files = dropped
        self.ctx.run_dir.write_text(instance.instance_id, "patch.diff", patch)
        self.result.logs["patch"] = "patch.diff"
        return patch

    def in_participant_container(self) -> bool:
        return (
            self.ctx.settings.grading.grade_in_participant_container
            and self.participant is not None
        )

    async def grade(self, prepared: PreparedInstance, patch: str, excluded: Excluded) -> None:
        self.phase("grading")
        t = time.monotonic()
        ctx, instance, grading = self.ctx, self.instance, self.ctx.settings.grading
        if self.in_participant_container():
            assert self.participant is not None
            await asyncio.to_thread(_reset_to_base, self.participant, instance)
            grader, own = self.participant, False
        else:
            grader, own = await self.grader.take(prepared.snapshot), True
        try:
            evaluation = await asyncio.to_thread(
                evaluate, grader, instance, test_recipe(prepared), patch,
                timeout=grading.test_timeout, fuzz=grading.patch_fuzz,
                excluded_p2p=excluded.p2p, log_dir=self.out_dir, test_user=test_user(ctx),
                excluded_f2p=excluded.f2p, writable=excluded.writable,
                successor=successor(ctx, instance, "grading"),
            )  # fmt: skip
            reruns = await asyncio.to_thread(
                rerun_deciding, self.ctx, self.instance, grader, test_recipe(prepared),
                evaluation, excluded.writable, test_user(self.ctx), self.out_dir,
            )  # fmt: skip
        finally:
            if own:  # removed while the participant's container is disposed of (finish)
                self.grader.remove_later(grader)
        self.timings["grading"] = time.monotonic() - t
        if evaluation.test_run is not None:
            self.timings["tests"] = evaluation.test_run.duration
        self._record_evaluation(evaluation)
        if reruns.runs:
            self.timings["flaky_reruns"], self.result.flaky_tests = reruns.seconds, reruns.flaky
            self.result.logs["flaky_reruns"] = "flaky_reruns.log"

    def _record_evaluation(self, evaluation: Evaluation) -> None:
        result = self.result
        result.status = evaluation.status
        result.reason = evaluation.reason or Reason.NONE
        result.apply_strategy = evaluation.apply.strategy if evaluation.apply else None
        if evaluation.groups is not None:
            result.tests = evaluation.groups
        result.excluded_patch_files += evaluation.excluded_files
        if evaluation.apply is not None:  # binary files changed without their content
            result.excluded_patch_files += evaluation.apply.dropped_binary_stubs
        result.suspicious = evaluation.suspicious
        result.tamper_evidence = evaluation.tamper_evidence
        result.stricter_than_official = evaluation.stricter_than_official
        result.logs.update(evaluation.logs)
        result.message = evaluation.message

    def record(self, status: Status, reason: Reason, message: str) -> None:
        self.result.status, self.result.reason, self.result.message = status, reason, message

    def record_failure(self, exc: Exception) -> None:
        """What ended the instance early, as its result."""
        if isinstance(exc, _Failed):
            self.record(Status.ERROR, exc.reason, str(exc))
            self.result.container = exc.container or self.result.container
        elif isinstance(exc, _Graded):
            self.record(exc.status, exc.reason, str(exc))
        elif isinstance(exc, DiskLimitExceeded):
            self.record(Status.ERROR, Reason.DISK_LIMIT, str(exc))
        elif isinstance(exc, SandboxError | UserError):
            self.record(Status.ERROR, Reason.INFRASTRUCTURE, str(exc))
        else:
            self.log.error("instance.crash", error=repr(exc))
            crash = traceback.format_exception(exc)
            self.ctx.run_dir.write_text(self.instance.instance_id, "crash.txt", "".join(crash))
            self.record(
                Status.ERROR, Reason.INFRASTRUCTURE, f"internal error: {exc!r} (see crash.txt)"
            )

    def discard(self) -> None:
        """Delete the set-up's files kept on the host (restricted Docker policy), if any."""
        if self.prepared is not None:
            self.prepared.discard()

    async def finish(self) -> InstanceResult:
        """The result with its timings; the participant's container kept or removed."""
        self.discard()
        await self.grader.drop()  # started ahead, but the instance ended before grading
        # kept or removed once it has stopped; a cancel meanwhile is passed on after that
        cancelled = await wait_through_cancels(self.stopping) if self.stopping else False
        result, participant = self.result, self.participant
        keep = participant is not None and await asyncio.to_thread(_should_keep, self.ctx, result)
        disposal = asyncio.create_task(asyncio.to_thread(_dispose, self.ctx, participant, keep))
        await self.grader.removed()  # counted in the total, as before; the disposal is not
        self.timings["total"] = time.monotonic() - self.started
        result.timings = {k: round(v, 3) for k, v in self.timings.items()}
        result.failure_label = label_of(result, self.out_dir)
        await disposal
        if not keep and participant is not None and result.container == participant.name:
            result.container = None
        self.log.info("instance.done", status=result.status, reason=result.reason)
        if cancelled:
            raise asyncio.CancelledError
        return result


def test_user(ctx: RunContext) -> str | None:
    """The user the tests run as: unprivileged when the settings ask for it, else root."""
    return TEST_USER if ctx.settings.grading.unprivileged_tests else None


def _reset_to_base(sandbox: Sandbox, instance: Instance) -> None:
    sandbox.exec(
        f"{SHELL_GIT_FUNCTION}\ncd /testbed && git reset -q --hard {instance.base_commit} "
        f"&& git clean -fdq && {drop_manifest_command()}",
        timeout=120,
    )


def _should_keep(ctx: RunContext, result: InstanceResult) -> bool:
    """Keep the participant's container? By policy (never for an empty patch under
    ``on_failure``: there is nothing to learn from it), within the per-run and per-host caps."""
    kept = ctx.settings.housekeeping
    policy = kept.keep_containers
    if policy == "never" or (policy == "on_failure" and result.status == Status.RESOLVED):
        return False
    if policy == "on_failure" and result.reason == Reason.EMPTY_PATCH:
        return False
    return room_to_keep(
        ctx.backend, ctx.settings.storage.data_dir, ctx.run_id,
        per_run=kept.max_kept_per_run, per_host=kept.max_kept_per_host,
    )  # fmt: skip


def _stop_quietly(ctx: RunContext, sandbox: Sandbox) -> None:
    """Stop ``sandbox`` at once; a failure is logged (its disposal removes it anyway)."""
    try:
        sandbox.stop(0)
    except Exception as exc:  # noqa: BLE001 - cleanup must not hide the result
        ctx.log.warning("container.stop_failed", container=sandbox.name, error=str(exc))


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
