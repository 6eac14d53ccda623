"""One assessment per A2A task: parse and check the request, start the run, stream progress,
answer with the summary and the leaderboard row (see :mod:`.green_agent`)."""

from __future__ import annotations

import asyncio
import contextlib
import traceback
from collections.abc import Awaitable
from pathlib import Path
from urllib.parse import urlparse

import structlog
from a2a.helpers import get_data_parts, get_message_text, new_data_part, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Message, Part, TaskState

from orchestrator.context.run_context import RunContext
from orchestrator.dataset.instances import load_instances, select
from orchestrator.errors import UserError
from orchestrator.frontends.server.admission import HostSlots, split_hosts
from orchestrator.frontends.server.assessment import (
    AssessmentRequest,
    InvalidAssessment,
    parse_request,
)
from orchestrator.frontends.server.assessment_text import (
    dataset_title,
    finished_parts,
    heartbeat_parts,
    infrastructure_failure,
    leaderboard_data,
    prose,
    summary_text,
)
from orchestrator.frontends.server.defaults import DEFAULT_HEARTBEAT
from orchestrator.frontends.server.request_policy import refusal_text, refused_overrides
from orchestrator.frontends.shared.participant_card import (
    CARD_PATH,
    CardOffAllowList,
    CardUnusable,
    read_card,
)
from orchestrator.housekeeping.inventory import list_containers
from orchestrator.log import get_logger
from orchestrator.models import Instance, InstanceResult
from orchestrator.participant.a2a_parts import enqueue_task_once
from orchestrator.participant.protocol import A2AParticipant
from orchestrator.participant.transport import host_allowed
from orchestrator.run.bootstrap import start_run
from orchestrator.run.scheduler import ProgressEvent, default_concurrency, run_evaluation
from orchestrator.sandbox import BackendUnavailable, SandboxBackend, SandboxError
from orchestrator.sandbox.factory import backend_from
from orchestrator.settings import Settings
from orchestrator.settings.serve import split_keys
from orchestrator.setup.images import base_pythons

ARTIFACT_NAME = "swe-bench-verified-result"


class _Rejected(Exception):
    """The request cannot run (the requester's doing): the task ends ``rejected``."""


class _Failed(Exception):
    """The run cannot go on (not the requester's doing): the task ends ``failed``."""


# how long a cancel waits for the assessment's instances to remove their containers
CANCEL_GRACE = 120.0


class AssessmentExecutor(AgentExecutor):
    """Runs one assessment per A2A task; see the module docstring for what it streams."""

    def __init__(self, settings: Settings, *, heartbeat: float = DEFAULT_HEARTBEAT) -> None:
        self.settings = settings
        self.heartbeat = heartbeat
        self.log = get_logger(component="green-agent")
        # `datasets` is not safe to call from two threads at once (its tqdm bars race)
        self._dataset_lock = asyncio.Lock()
        self.slots = HostSlots(settings.run.concurrency or default_concurrency())
        self.allowed_hosts = split_hosts(settings.serve.serve_allowed_hosts)
        self.allowed_overrides = set(split_keys(settings.serve.serve_allowed_overrides))
        # the assessments at work, by A2A task id: their task, an event set once their work
        # (and its instances' clean-up) has ended, which a cancel waits for, and their updater
        self._working: dict[str, tuple[asyncio.Task[object], asyncio.Event, TaskUpdater]] = {}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None and context.task_id and context.context_id
        await enqueue_task_once(context, event_queue)
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        ended = asyncio.Event()
        if (current := asyncio.current_task()) is not None:
            self._working[context.task_id] = (current, ended, updater)
        try:
            await self._assess(context, updater)
        except Exception as exc:  # noqa: BLE001 - one assessment must never take the server down
            if current is None or not current.cancelling():
                await self._end_with(exc, context.task_id, updater)
                return
            # canceled (its state is already set): a clean-up error is no failure of the task
            self.log.warning(
                "assessment.cancel_cleanup_error", task_id=context.task_id, error=str(exc)
            )
            raise asyncio.CancelledError from exc
        finally:
            self._working.pop(context.task_id, None)
            ended.set()

    async def _end_with(self, exc: Exception, task_id: str, updater: TaskUpdater) -> None:
        """End the task as ``exc`` says: rejected, failed with the reason, or failed with an
        internal error (one assessment never takes the server down)."""
        if isinstance(exc, _Rejected):
            self.log.info("assessment.rejected", task_id=task_id, reason=str(exc))
            await updater.reject(updater.new_agent_message([new_text_part(str(exc))]))
        elif isinstance(exc, _Failed):
            self.log.error("assessment.failed", task_id=task_id, reason=str(exc))
            # the reason as an artifact too: a client that reads only artifacts sees it
            data = {"type": "assessment_failed", "reason": str(exc)}
            await updater.add_artifact(
                [new_text_part(prose(str(exc))), new_data_part(data)], name=ARTIFACT_NAME
            )
            await updater.failed(updater.new_agent_message([new_text_part(str(exc))]))
        else:
            self.log.error(
                "assessment.crash", task_id=task_id,
                error="".join(traceback.format_exception(exc)),
            )  # fmt: skip
            text = f"The green agent failed with an internal error: {type(exc).__name__}: {exc}."
            await updater.failed(updater.new_agent_message([new_text_part(text)]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Cancel the assessment and wait (at most ``CANCEL_GRACE`` seconds) until its
        instances have cleaned up, so that ``canceled`` means no container of it is left."""
        assert context.task_id and context.context_id
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        # the state first (the SDK reads it once this returns; the work's end closes its queue)
        await updater.cancel(updater.new_agent_message([new_text_part("Assessment canceled.")]))
        working = self._working.get(context.task_id)
        if working is not None:
            task, ended, _ = working
            await _cancel_and_wait([(task, ended)], CANCEL_GRACE)

    async def stop(self, timeout: float) -> int:
        """The server is stopping: cancel every assessment in progress as ``tasks/cancel``
        does (each ends ``canceled``, saying why) and wait, at most ``timeout`` seconds, until
        their instances have cleaned up. The number still at work then."""
        working = list(self._working.values())
        if not working:
            return 0
        self.log.warning("green-agent.stopping", assessments=len(working), timeout=timeout)
        text = (
            "Assessment canceled: the green agent is stopping. Fix: send the assessment again "
            "once it is back."
        )
        for _, _, updater in working:
            with contextlib.suppress(Exception):  # its queue may be closed already
                await updater.cancel(updater.new_agent_message([new_text_part(text)]))
        await _cancel_and_wait([(task, ended) for task, ended, _ in working], timeout)
        left = sum(not ended.is_set() for _, ended, _ in working)
        self.log.warning("green-agent.stopped", assessments=len(working), still_working=left)
        return left

    async def _assess(self, context: RequestContext, updater: TaskUpdater) -> None:
        assert context.message is not None
        request = self._request(context.message)
        instances = await self._instances(request)
        if not instances:
            await self._empty_shard(request, updater)
            return
        settings, concurrency, capped = self._run_settings(request)
        backend = await ready_backend(self.settings)
        try:
            card = await read_card(request.participant_url, allowed_hosts=self.allowed_hosts)
        except CardOffAllowList as exc:
            raise _Failed(
                f"The green agent cannot evaluate this participant: {exc} Fix: the allow-list "
                f"refused the host {exc.host!r}: ask the operator to allow it "
                f"(`swe-green serve --allow-participant-host {exc.host}`, setting "
                "serve_allowed_hosts), or have the participant's card name its interface on an "
                "allowed host."
            ) from None
        except CardUnusable as exc:
            raise _Failed(
                f"The green agent cannot evaluate this participant: {exc} Fix: start the "
                "participant, or send its A2A URL (the agent card is read at "
                f"<URL>{CARD_PATH})."
            ) from None
        name = card.get("name") if isinstance(card.get("name"), str) else None
        participant_id = name or request.participant_url
        ctx = start_run(
            settings, backend, kind="a2a",
            config={
                "source": "a2a", "task_id": context.task_id,
                "request": request.model_dump(mode="json", by_alias=True),
                "participant": request.participant_url, "participant_id": participant_id,
                "selection": {"ids": [i.instance_id for i in instances]},
                "instances": [i.instance_id for i in instances],
            },
        )  # fmt: skip
        run_id, run_dir = ctx.run_id, ctx.run_dir
        await updater.start_work(
            updater.new_agent_message(
                self._start_parts(
                    request, instances, run_id, concurrency, capped, self._ahead(context.task_id)
                )
            )
        )
        self.log.info("assessment.start", run_id=run_id, instances=len(instances))
        reached: set[str] = set()
        try:
            results = await self._evaluate(ctx, instances, request, concurrency, updater, reached)
        finally:
            await asyncio.to_thread(
                prune_kept, backend, self.settings.serve.serve_max_kept_containers, self.log,
                self.settings.storage.data_dir,
            )  # fmt: skip
        broken = infrastructure_failure(results, reached)
        if broken:
            raise _Failed(broken)
        row, data = leaderboard_data(run_dir, request, participant_id, results)
        text = summary_text(
            row, participant_id, run_id, request.ignored_text(), dataset=settings.dataset.dataset
        )
        await updater.add_artifact([new_text_part(text), new_data_part(data)], name=ARTIFACT_NAME)
        await updater.complete()
        self.log.info("assessment.done", run_id=run_id, resolved_pct=row.resolved_pct)

    def _request(self, message: Message) -> AssessmentRequest:
        """The request, parsed and checked against the allow-list (else rejected)."""
        try:
            request = parse_request(get_message_text(message), get_data_parts(message.parts))
        except InvalidAssessment as exc:
            raise _Rejected(str(exc)) from None
        if not host_allowed(request.participant_url, self.allowed_hosts):
            host = urlparse(request.participant_url).hostname
            raise _Rejected(
                f"Participant host {host!r} is not on this green agent's allow-list "
                f"({', '.join(self.allowed_hosts)}). Fix: use an allowed participant URL, or "
                "ask the operator to add the host (serve_allowed_hosts)."
            )
        refused = refused_overrides(
            request.to_settings_overrides(), self.settings.flat(), self.allowed_overrides
        )
        if refused:
            raise _Rejected(refusal_text(refused))
        return request

    def _ahead(self, task_id: str | None) -> int:
        """How many assessments still at work began before ``task_id``'s."""
        working = list(self._working)
        return working.index(task_id) if task_id in working else 0

    def _start_parts(
        self, request: AssessmentRequest, instances: list[Instance], run_id: str,
        concurrency: int, capped: bool, ahead: int,
    ) -> list[Part]:  # fmt: skip
        """The first ``working`` update: what is evaluated, how, and whether it queues: the
        host's slots are taken, or the assessments at work that began before this one (each
        holds a slot once its run starts) are as many as the slots."""
        note = f", concurrency capped at {concurrency}" if capped else ""
        queued = self.slots.busy or ahead >= self.slots.capacity
        queue_note = (
            f" Queued: all {self.slots.capacity} of the host's instance slots are busy with "
            "other assessments; instances start as slots free up."
            if queued
            else ""
        )
        ignored = request.ignored_text()
        text = (
            f"Evaluating {len(instances)} instance(s) against {request.role} at "
            f"{request.participant_url}: run {run_id}, "
            f"{concurrency} at a time{note}.{queue_note}" + (f" {ignored}" if ignored else "")
        )
        data = {
            "type": "assessment_started", "run_id": run_id, "total": len(instances),
            "concurrency": concurrency, "queued": queued, "host_slots": self.slots.capacity,
            "ignored_keys": request.ignored, "instance_ids": [i.instance_id for i in instances],
        }  # fmt: skip
        return [new_text_part(text), new_data_part(data)]

    async def _instances(self, request: AssessmentRequest) -> list[Instance]:
        """The selected instances; empty only for a shard the selection leaves empty."""
        s = self.settings
        try:
            async with self._dataset_lock:
                dataset = await asyncio.to_thread(
                    load_instances, s.dataset.dataset, s.dataset.dataset_split
                )
        except UserError as exc:
            raise _Failed(
                f"The green agent cannot load its dataset {s.dataset.dataset}: {exc}"
            ) from None
        selection = request.selection()
        try:
            chosen = select(dataset, **selection.model_dump())
            unsharded = select(dataset, **selection.model_dump(exclude={"shard"}))
        except UserError as exc:
            raise _Rejected(f"The instance selection is invalid: {exc}") from None
        if not unsharded:
            raise _Rejected(
                "The instance selection picks no instance. Fix: check instance_ids, pattern, "
                "repo and count against the dataset."
            )
        return chosen

    async def _empty_shard(self, request: AssessmentRequest, updater: TaskUpdater) -> None:
        """A shard with nothing in it: completed, a summary and no leaderboard row."""
        shard = request.selection().shard
        ignored = request.ignored_text()
        text = (
            f"{dataset_title(self._run_settings(request)[0].dataset.dataset)}: shard {shard} of "
            "this selection holds no instance "
            "(more shards than instances); nothing to evaluate, no leaderboard row."
            + (f" {ignored}" if ignored else "")
        )
        await updater.add_artifact([new_text_part(prose(text))], name=ARTIFACT_NAME)
        await updater.complete()

    def _run_settings(self, request: AssessmentRequest) -> tuple[Settings, int, bool]:
        """The run's settings; concurrency is capped at what the host allows, and kept
        containers follow the server's policy (``serve_keep_containers``)."""
        host_limit = self.slots.capacity
        wanted = request.config.concurrency or host_limit
        concurrency = min(wanted, host_limit)
        overrides = request.to_settings_overrides() | {
            "concurrency": concurrency,
            "keep_containers": self.settings.serve.serve_keep_containers,
        }
        return self.settings.replace(**overrides), concurrency, wanted > host_limit

    async def _evaluate(
        self,
        ctx: RunContext,
        instances: list[Instance],
        request: AssessmentRequest,
        concurrency: int,
        updater: TaskUpdater,
        reached: set[str],
    ) -> list[InstanceResult]:
        """Run the instances; ``reached`` collects those whose participant was called."""

        async def working(parts: list[Part]) -> None:
            await updater.update_status(
                TaskState.TASK_STATE_WORKING, updater.new_agent_message(parts)
            )

        def on_event(event: ProgressEvent) -> Awaitable[None] | None:
            if event.kind == "phase" and event.phase == "participant":
                reached.add(event.instance_id)
            if event.kind == "finished" and event.result is not None:
                return working(finished_parts(event.done, event.total, event.result))
            if event.kind == "heartbeat":
                return working(
                    heartbeat_parts(
                        event.done, event.total, event.statuses, event.in_flight, event.elapsed,
                        self.slots.capacity,
                    )
                )  # fmt: skip
            return None

        return await run_evaluation(
            ctx,
            instances,
            A2AParticipant(url=request.participant_url, allowed_hosts=tuple(self.allowed_hosts)),
            concurrency=concurrency,
            on_event=on_event,
            heartbeat=self.heartbeat,
            gate=self.slots.slot,
        )


async def _cancel_and_wait(
    working: list[tuple[asyncio.Task[object], asyncio.Event]], timeout: float
) -> None:
    """Cancel the assessments' tasks and wait (at most ``timeout`` s) for their clean-up."""
    for task, _ in working:
        task.cancel()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(
            asyncio.gather(*(ended.wait() for _, ended in working)), timeout=timeout
        )


async def ready_backend(settings: Settings) -> SandboxBackend:
    """The sandbox backend, once its engine answers and has a base image (or a registry to
    pull one from)."""
    try:
        backend = await asyncio.to_thread(backend_from, settings)
    except BackendUnavailable as exc:
        raise _Failed(f"The green agent cannot evaluate: {exc}") from None
    base = f"{settings.environment.image_prefix}/base"
    try:
        # by image inspect, which Amber's Docker gateway allows (it refuses listing)
        pythons = await asyncio.to_thread(base_pythons, backend, settings.environment)
    except SandboxError as exc:
        raise _Failed(
            f"The green agent cannot evaluate: the Docker engine refused to inspect images "
            f"({exc}). Fix: give the green agent a Docker engine with the images API "
            "(the host's socket, or Amber's Docker gateway)."
        ) from None
    if not pythons:
        raise _Failed(
            f"The green agent cannot evaluate: no base image {base}:* on its Docker "
            "engine. Fix: run `swe-green images build` on the host (or "
            "`docker exec <green container> swe-green images build`), then send the "
            "assessment again."
        )
    return backend


def prune_kept(
    backend: SandboxBackend,
    cap: int,
    log: structlog.typing.FilteringBoundLogger,
    data_dir: Path | None = None,
) -> None:
    """Keep at most ``cap`` (``serve_max_kept_containers``) stopped participant containers of
    assessments (run ids ``a2a-*``); the oldest go first. Never touches running ones, nor
    those a live lease in ``data_dir`` holds (an assessment in progress)."""
    from orchestrator.housekeeping.engine_leases import live_everywhere

    try:
        live = live_everywhere(backend, data_dir)
        kept = [
            info
            for info in list_containers(backend)  # newest first
            if info.run_id.startswith("a2a-") and info.status not in ("running", "created")
        ]
        for info in kept[cap:]:
            if live is not None and live.holds(info.run_id, info.name):
                continue
            backend.remove_container(info.id)
            log.info("kept-container.removed", container=info.name, cap=cap)
    except SandboxError as exc:
        log.warning("kept-container.prune_failed", error=str(exc))
