"""The seven phases for one instance, joined: ``run_instance`` always returns a result.

Each phase is a package with one entry, and :func:`run_instance` reads as their calls:

1-3  environment (environments/build.py): check_out (checkout/), set_up (setup/) and
     install_dependencies (dependencies/), or the cached environment image
4    base_commit (environments/build.py): prepare_base_commit (base_commit/), or the cached
     instance image
 +   validate (validation/): the environment can run the instance's tests
5    dispatch (participant/): the participant works, in its own container if it needs one
6    take_patch (patches/): from the answer, else the container's diff; test files dropped
7    grade (grading/): apply, run the tests with the network off, classify; the tests that
     decided a verdict against the patch run again

How the path is concurrent, and how its containers are cleaned up, is :mod:`.instance_scope`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import structlog

from orchestrator.context.run_context import RunContext
from orchestrator.context.successor import Fresh, replicas, successor
from orchestrator.diffs.diff import Patch
from orchestrator.environments.build import Environment, base_commit, environment
from orchestrator.environments.prepared import PreparedInstance, recipe_of
from orchestrator.errors import SandboxError, UserError
from orchestrator.grading import GradingRequest, grade
from orchestrator.grading.evaluation import Evaluation
from orchestrator.grading.page_cache import evict_page_cache
from orchestrator.grading.twins.check import NOT_VALIDATED, TWINS_OFF
from orchestrator.grading.twins.model import TwinSet
from orchestrator.grading.wider import WiderBaseline
from orchestrator.grading.wider.run import widen
from orchestrator.housekeeping.kept import keep_stopped, room_to_keep
from orchestrator.models import Instance, InstanceResult, Reason, Status
from orchestrator.participant import dispatch
from orchestrator.participant.client import ParticipantLimits, ParticipantOutcome
from orchestrator.participant.protocol import Participant, Workspace
from orchestrator.patches import TakenPatch, take_patch
from orchestrator.patches.extract import extract_patch
from orchestrator.patches.participant_container import (
    NoPatch,
    reset_to_base,
    stop_quietly,
    take_from_container,
)
from orchestrator.recipes.recipe import touched_test_files
from orchestrator.run.instance_scope import InstanceScope, result_or_none, started
from orchestrator.sandbox import DiskLimitExceeded, Sandbox, Snapshot
from orchestrator.setup.plan import SetupFailed, fallback_note, llm_fallback_available
from orchestrator.tools.tools_host import sandbox_tool_runner
from orchestrator.validation import validate
from sandbox_tools.contract import TEST_USER

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
    # the effective impossible twins (None: validation is off, no verdict is twin-checked)
    twins: TwinSet | None = None
    wider: WiderBaseline | None = None  # the gold patch's wider runs (setting wider_tests)


async def run_instance(
    ctx: RunContext,
    instance: Instance,
    participant: Participant,
    on_phase: PhaseCallback | None = None,
) -> InstanceResult:
    """Run phases 1-7 for ``instance``; errors become an ``error`` result, never an exception
    (a cancel is passed on once the instance's containers are cleaned up)."""
    # every log line of this task (and its threads) carries the run and the instance
    structlog.contextvars.bind_contextvars(run_id=ctx.run_id, instance_id=instance.instance_id)
    run = _InstanceRun(ctx, instance, participant, on_phase)
    try:
        env = await run.environment()  # phases 1-3
        prepared = await run.base_commit(env)  # phase 4
        prepared, excluded = await run.validate(prepared)  # the environment runs the tests
        outcome = await run.dispatch(prepared)  # phase 5
        patch = await run.take_patch(outcome)  # phase 6
        await run.grade(prepared, patch, excluded)  # phase 7
    except asyncio.CancelledError:
        run.cancelled = True
        run.record(Status.ERROR, Reason.CANCELLED, "cancelled")
    except Exception as exc:  # noqa: BLE001 - one instance must never stop the others
        run.record_failure(exc)
    return await run.finish()


class _InstanceRun:
    """One instance's way through the phases: what each phase adds to its result."""

    def __init__(
        self, ctx: RunContext, instance: Instance, participant: Participant,
        on_phase: PhaseCallback | None,
    ) -> None:  # fmt: skip
        self.ctx, self.instance, self.participant = ctx, instance, participant
        self.on_phase = on_phase
        self.log = ctx.instance_log(instance)
        self.out_dir = ctx.instance_dir(instance)
        self.timings: dict[str, float] = {}
        self.result = InstanceResult(
            instance_id=instance.instance_id, repo=instance.repo, status=Status.ERROR
        )
        self.started = time.monotonic()
        self.scope = InstanceScope()
        self.cancelled = False
        self.container: Sandbox | None = None  # the participant's
        self.grading: asyncio.Task[Sandbox] | None = None  # the grading container's start
        # the secret pair's two containers, started with the grading one (validation has twins)
        self.pair_grading: list[asyncio.Task[Sandbox]] = []
        self.twins_wanted = False
        self.hidden_tests = touched_test_files(instance.test_patch)  # never part of a graded patch

    def phase(self, name: str) -> None:
        self.log.info("phase", phase=name)
        if self.on_phase:
            self.on_phase(self.instance.instance_id, name)

    async def environment(self, fallback_from: str | None = None) -> Environment:
        self.phase("setup")
        try:
            return await self.scope.blocking(environment, self.ctx, self.instance, fallback_from)
        except SetupFailed as exc:
            raise _Failed(Reason.ENVIRONMENT, str(exc), exc.container) from exc

    async def base_commit(self, env: Environment) -> PreparedInstance:
        try:
            prepared = await self.scope.blocking(base_commit, self.ctx, self.instance, env)
        except SetupFailed as exc:
            raise _Failed(Reason.ENVIRONMENT, str(exc), exc.container) from exc

        async def discard() -> None:  # the set-up's files kept on the host, if any
            await self.scope.blocking(prepared.discard)

        self.scope.on_close(discard)
        result = self.result
        self.timings.update(prepared.timings)
        result.setup_tokens = prepared.setup_tokens
        if prepared.plan.recipe is not None:
            result.python_spec = prepared.plan.recipe.python
        result.setup_strategy = prepared.plan.strategy
        result.python_used = prepared.python_used or prepared.plan.python
        result.logs["setup"] = "setup.log"
        return prepared

    async def validate(self, prepared: PreparedInstance) -> tuple[PreparedInstance, Excluded]:
        """The environment the instance runs in, and the tests left out of grading:
        PASS_TO_PASS and FAIL_TO_PASS (validation off: none). Strategy ``auto``: an inferred
        environment that fails is handed with its failure to the LLM agent (an API key
        set), whose environment is validated in its place."""
        grading = self.ctx.settings.grading
        if not self.ctx.settings.validation.validate_env:
            return prepared, Excluded()
        self.phase("validation")
        t = time.monotonic()
        check = await self.scope.blocking(
            validate, self.ctx, self.instance, prepared.snapshot, recipe_of(prepared)
        )
        self.timings["validation"] = time.monotonic() - t
        if not check.ok and prepared.plan.strategy == "infer":
            if llm_fallback_available(self.ctx.settings):
                failure = f"environment validation: {check.message}"
                env = await self.environment(fallback_note(prepared.plan, failure))
                return await self.validate(await self.base_commit(env))
        if not check.ok:
            raise _Failed(Reason.ENVIRONMENT, f"environment validation: {check.message}")
        self.twins_wanted = grading.twin_check and bool(check.twins)
        excluded = Excluded(
            p2p=check.excluded_p2p, f2p=check.excluded_f2p, writable=check.writable,
            twins=check.twin_set() if grading.twin_check else None, wider=check.wider,
        )  # fmt: skip
        return prepared, excluded

    async def dispatch(self, prepared: PreparedInstance) -> ParticipantOutcome:
        """Phase 5; a participant that needs no container (a predictions file) answers at
        once, and no container is started for it."""
        limits = ParticipantLimits.from_settings(self.ctx.settings.participant)
        transcript = self.out_dir / "transcript.jsonl"
        if not self.participant.works_in_container:
            workspace = Workspace(tools=None, limits=limits, transcript=transcript)
            return await dispatch(self.participant, self.instance, workspace)
        self.phase("participant")
        t = time.monotonic()
        if not self.ctx.settings.grading.grade_in_participant_container:
            # phase 7's fresh container starts beside the participant's: it idles until the
            # patch is taken and owes nothing to what the participant does
            self.start_grading(prepared.snapshot)
        container = self.start("participant", prepared.snapshot, self._dispose_participant)
        self.container = await started(container)
        self.result.container = self.container.name
        if self.twins_wanted:  # nothing an earlier grading held in the page cache is heard
            await self.scope.blocking(evict_page_cache, self.container)
        if self.grading is not None:  # both containers are up before the participant is asked
            await asyncio.wait([self.grading])
        # the tools program is copied in at the first tool call (a participant that answers
        # with its patch makes none)
        tools = sandbox_tool_runner(self.container)
        workspace = Workspace(tools=tools, limits=limits, transcript=transcript)
        outcome = await dispatch(self.participant, self.instance, workspace)
        self.timings["participant"] = time.monotonic() - t
        self.result.tool_calls = outcome.tool_calls
        self.result.logs["transcript"] = "transcript.jsonl"
        if outcome.reason is not None:
            raise _Failed(outcome.reason, outcome.message or str(outcome.reason))
        return outcome

    def start(
        self, role: str, image: Snapshot, dispose: Callable[[Sandbox], object]
    ) -> asyncio.Task[Sandbox]:
        """Begin starting a container of ``role`` beside the path (network off); the scope
        disposes of it with ``dispose`` (in a worker thread) when the instance ends."""
        task = self.scope.beside(self.ctx.start_sandbox, image, self.instance, role, network=False)

        async def disposal() -> None:
            sandbox = result_or_none(task)
            if sandbox is not None:
                await self.scope.blocking(dispose, sandbox)

        self.scope.on_close(disposal)
        return task

    def start_grading(self, image: Snapshot) -> asyncio.Task[Sandbox]:
        """The grading container's start (begun now if not ahead); removed at the end. The
        secret pair's two start with it (:mod:`.grading.twins.pair`), named alike."""
        if self.grading is None:
            self.grading = self.start("grading", image, lambda sandbox: sandbox.remove())
            if self.twins_wanted:
                self.pair_grading = [
                    self.start("grading", image, lambda box: box.remove()) for _ in range(2)
                ]
        return self.grading

    async def take_patch(self, outcome: ParticipantOutcome) -> Patch:
        """Phase 6: the patch of the answer (or the predictions file), else the container's
        diff; hidden test files dropped; written to ``patch.diff``. Read once: phase 7 gets
        the model (:class:`~orchestrator.diffs.diff.Patch`)."""
        self.phase("patch")
        answered = outcome.patch
        if answered is None:
            answered = extract_patch(outcome.final_text, outcome.final_data)
        container = self.container
        if container is None:
            taken = take_patch(self.instance, answered, None, self.hidden_tests)
        elif answered and not self.in_participant_container():
            # nothing the participant left running (a fork bomb, a loop rewriting files, a
            # disk writer) runs on while grading goes on in its own container: stopped beside
            # the path (the kill is sent at once); past the disk budget this raises
            await self.scope.blocking(container.check_disk)
            self.scope.beside(stop_quietly, self.ctx, container)
            taken = take_patch(self.instance, answered, None, self.hidden_tests)
        else:
            try:
                taken = await self.scope.blocking(
                    take_from_container, self.instance, answered, container, self.hidden_tests
                )
            except NoPatch as exc:
                raise _Graded(Status.NO_OP, Reason.EMPTY_PATCH, str(exc)) from exc
        return self._kept(taken)

    def _kept(self, taken: TakenPatch) -> Patch:
        self.result.excluded_patch_files = taken.dropped
        self.ctx.run_dir.write_text(self.instance.instance_id, "patch.diff", taken.patch.text)
        self.result.logs["patch"] = "patch.diff"
        return taken.patch

    def in_participant_container(self) -> bool:
        return (
            self.ctx.settings.grading.grade_in_participant_container and self.container is not None
        )

    async def grade(self, prepared: PreparedInstance, patch: Patch, excluded: Excluded) -> None:
        self.phase("grading")
        t = time.monotonic()
        ctx, instance, grading = self.ctx, self.instance, self.ctx.settings.grading
        if self.in_participant_container():
            assert self.container is not None
            await self.scope.blocking(reset_to_base, self.container, instance)
            grader = self.container
        else:
            grader = await started(self.start_grading(prepared.snapshot))
        pair_boxes = [await started(task) for task in self.pair_grading]
        request = GradingRequest(
            timeout=grading.test_timeout, fuzz=grading.patch_fuzz,
            excluded_p2p=tuple(excluded.p2p), excluded_f2p=tuple(excluded.f2p),
            log_dir=self.out_dir, test_user=grading_user(ctx), writable=tuple(excluded.writable),
            successor=successor(ctx, instance, "grading"), flaky_reruns=grading.flaky_reruns,
            twins=excluded.twins if grading.twin_check else None,
            pair_box=self._pair_box(prepared.snapshot, pair_boxes),
            replicas=replicas(ctx, instance, "grading"),
        )  # fmt: skip
        evaluation = await self.scope.blocking(
            grade, grader, instance, recipe_of(prepared), patch, request
        )
        self.timings["grading"] = time.monotonic() - t
        check = evaluation.twin_check
        if not grading.twin_check and check is not None and check.why_unchecked == NOT_VALIDATED:
            check.why_unchecked = TWINS_OFF
        if evaluation.twin_seconds is not None:  # the secret pair, before the official run
            self.timings["twins"] = evaluation.twin_seconds
        if evaluation.test_run is not None:
            self.timings["tests"] = evaluation.test_run.duration
        self._record_evaluation(evaluation)
        if grading.wider_tests and evaluation.status == Status.RESOLVED:  # beside the verdict
            t = time.monotonic()
            await self.scope.blocking(
                widen, self.result, ctx, instance, prepared.snapshot, recipe_of(prepared), patch,
                excluded.wider, excluded.writable, (excluded.p2p, excluded.f2p),
            )  # fmt: skip
            self.timings["wider"] = time.monotonic() - t

    def _pair_box(self, image: Snapshot, ahead: list[Sandbox]) -> Fresh:
        """Where each run of the secret pair happens: a container started with the grading
        one (``ahead``, in turn), then fresh ones from ``image``; each removed when done."""
        waiting = list(ahead)

        @contextlib.contextmanager
        def box() -> Iterator[Sandbox]:
            sandbox = (
                waiting.pop(0)
                if waiting
                else self.ctx.start_sandbox(image, self.instance, "grading", network=False)
            )
            try:
                yield sandbox
            finally:
                sandbox.remove()

        return box

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
        result.compiled_modules = evaluation.compiled_modules
        result.stricter_than_official = evaluation.stricter_than_official
        result.logs.update(evaluation.logs)
        result.message = evaluation.message
        result.twin_check = evaluation.twin_check
        if evaluation.rerun_seconds is not None:  # deciding tests ran again
            self.timings["flaky_reruns"] = evaluation.rerun_seconds
            result.flaky_tests = evaluation.flaky_tests

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

    async def finish(self) -> InstanceResult:
        """The result with its timings, once the scope has disposed of the instance's
        containers (the participant's kept or removed); a cancel is passed on after that."""
        cancelled = await self.scope.close()
        result = self.result
        self.timings["total"] = time.monotonic() - self.started
        result.timings = {k: round(v, 3) for k, v in self.timings.items()}
        self.log.info("instance.done", status=result.status, reason=result.reason)
        if cancelled or self.cancelled:
            raise asyncio.CancelledError
        return result

    def _dispose_participant(self, sandbox: Sandbox) -> None:
        """Keep the participant's container for ``swe-green inspect`` (by policy, within the
        caps; never for a cancelled instance), else remove it."""
        keep = not self.cancelled and _should_keep(self.ctx, self.result)
        _dispose(self.ctx, sandbox, keep)
        if not keep and self.result.container == sandbox.name:
            self.result.container = None


def grading_user(ctx: RunContext) -> str | None:
    """The user the tests run as: unprivileged when the settings ask for it, else root."""
    return TEST_USER if ctx.settings.grading.unprivileged_tests else None


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
