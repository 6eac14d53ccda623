"""The green agent on A2A: receives an assessment request, evaluates, answers with the results.

One request is one A2A task (see :mod:`orchestrator.assessment` for the request):

- a malformed request, or a selection that picks nothing, ends the task ``rejected`` with a
  text saying what is wrong;
- otherwise the task goes ``working``: a status update when the run starts, one per finished
  instance (text ``3/10 demo__calc-1: resolved`` and a data part with the instance's result)
  and a heartbeat every ``heartbeat`` seconds while instances are in flight;
- it ends ``completed`` with one artifact: a short summary text (not JSON) and a data part
  holding the leaderboard row (DESIGN "Results") plus the per-instance results under
  ``instances``. The run's directory (``runs_dir/<run id>``) gets ``results.json`` too.
- a failure that is not the requester's doing (no Docker daemon, a dataset the server cannot
  read, an internal error) ends the task ``failed`` with the reason; the server stays up.

Several assessments may run at once; each has its own run id and directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import traceback
import uuid
from collections.abc import Awaitable
from typing import Annotated, Any

import docker
import httpx
import typer
import uvicorn
from a2a.client import A2ACardResolver
from a2a.helpers import get_data_parts, get_message_text, new_data_part, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import AgentSkill, Part, TaskState
from starlette.applications import Starlette

from .assessment import EXAMPLE, AssessmentRequest, InvalidAssessment, parse_request
from .context import RunContext
from .docker_engine import connect
from .errors import DockerUnavailable, UserError
from .grading import LeaderboardRow
from .instances import load_instances, select
from .log import get_logger
from .models import Instance, InstanceResult, Status
from .participants.a2a_parts import enqueue_task_once
from .participants.server import CardInfo
from .participants.server import build_app as build_a2a_app
from .results import RunDir
from .scheduler import ProgressEvent, default_concurrency, run_evaluation
from .settings import Settings, load_settings

DEFAULT_HEARTBEAT = 20.0
ARTIFACT_NAME = "swe-bench-verified-result"
_CARD_TIMEOUT = 10.0

GREEN_CARD = CardInfo(
    name="swe-bench-verified-green",
    description=(
        "Evaluates a coding agent on SWE-bench Verified: one Docker container per instance, "
        "shell and editor tools over A2A, the instance's tests graded with the network off."
    ),
    skills=[
        AgentSkill(
            id="swe-bench-verified",
            name="SWE-bench Verified assessment",
            description=(
                "Send one message whose text is JSON: "
                '{"participants": {"<role>": "<participant A2A URL>"}, "config": {...}}. '
                "Config keys: instance_ids, pattern, repo, count (num_instances), shard, "
                "concurrency, setup_strategy, instance_timeout, tool_timeout, test_timeout, "
                "participant_timeout, max_tool_calls, validate."
            ),
            tags=["swe-bench", "coding", "benchmark", "green-agent"],
            examples=[EXAMPLE],
        )
    ],
)


def new_run_id() -> str:
    """``a2a-<UTC timestamp>-<8 hex>``: unique per assessment, safe for paths and labels."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    return f"a2a-{stamp}-{uuid.uuid4().hex[:8]}"


def instance_summary(result: InstanceResult) -> dict[str, Any]:
    """One instance's result in brief: status, reason, test counts (for updates, artifacts)."""
    tests = result.tests
    return {
        "instance_id": result.instance_id,
        "repo": result.repo,
        "status": result.status.value,
        "reason": result.reason.value,
        "message": result.message,
        "fail_to_pass_passed": len(tests.fail_to_pass_passed),
        "fail_to_pass_total": len(tests.fail_to_pass_passed) + len(tests.fail_to_pass_failed),
        "pass_to_pass_passed": len(tests.pass_to_pass_passed),
        "pass_to_pass_total": len(tests.pass_to_pass_passed) + len(tests.pass_to_pass_failed),
        "apply_strategy": result.apply_strategy,
        "tool_calls": result.tool_calls,
        "seconds": result.timings.get("total"),
    }


def progress_text(done: int, total: int, result: InstanceResult) -> str:
    """``3/10 demo__calc-1: resolved`` (with the reason when there is one)."""
    reason = f" ({result.reason.value})" if result.reason.value else ""
    return f"{done}/{total} {result.instance_id}: {result.status.value}{reason}"


def heartbeat_text(done: int, total: int, in_flight: dict[str, str], elapsed: float) -> str:
    running = ", ".join(f"{iid} ({phase})" for iid, phase in sorted(in_flight.items()))
    minutes, seconds = divmod(int(elapsed), 60)
    return (
        f"{done}/{total} done after {minutes}m{seconds:02d}s; "
        f"running: {running or 'nothing (finishing)'}"
    )


def summary_text(row: LeaderboardRow, participant_id: str, run_id: str) -> str:
    """The artifact's human summary: one paragraph of prose (never valid JSON)."""
    counts = [
        f"{getattr(row, f'{status.value}_count')} {status.value}"
        for status in Status
        if getattr(row, f"{status.value}_count")
    ]
    return (
        f"SWE-bench Verified: {participant_id} resolved {row.resolved_count} of "
        f"{row.total_instances} instance(s) ({row.resolved_pct:.1%}). "
        f"Outcomes: {', '.join(counts) or 'none'}. "
        f"FAIL_TO_PASS tests passing: {row.fail_to_pass_passed_pct:.1%}; "
        f"PASS_TO_PASS tests passing: {row.pass_to_pass_passed_pct:.1%}. Run {run_id}."
    )


async def participant_card_name(url: str, timeout: float = _CARD_TIMEOUT) -> str | None:
    """The name on the participant's agent card; ``None`` when it cannot be read."""
    try:
        async with httpx.AsyncClient(timeout=timeout) as http:
            card = await asyncio.wait_for(A2ACardResolver(http, url).get_agent_card(), timeout)
    except Exception:  # noqa: BLE001 - any failure just means "no name"
        return None
    return card.name or None


class _Rejected(Exception):
    """The request cannot run (the requester's doing): the task ends ``rejected``."""


class _Failed(Exception):
    """The run cannot go on (not the requester's doing): the task ends ``failed``."""


class AssessmentExecutor(AgentExecutor):
    """Runs one assessment per A2A task; see the module docstring for what it streams."""

    def __init__(self, settings: Settings, *, heartbeat: float = DEFAULT_HEARTBEAT) -> None:
        self.settings = settings
        self.heartbeat = heartbeat
        self.log = get_logger(component="green-agent")
        # `datasets` is not safe to call from two threads at once (its tqdm bars race)
        self._dataset_lock = asyncio.Lock()

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None and context.task_id and context.context_id
        await enqueue_task_once(context, event_queue)
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        try:
            await self._assess(context, updater)
        except _Rejected as exc:
            self.log.info("assessment.rejected", task_id=context.task_id, reason=str(exc))
            await updater.reject(updater.new_agent_message([new_text_part(str(exc))]))
        except _Failed as exc:
            self.log.error("assessment.failed", task_id=context.task_id, reason=str(exc))
            await updater.failed(updater.new_agent_message([new_text_part(str(exc))]))
        except Exception as exc:  # noqa: BLE001 - one assessment must never take the server down
            self.log.error(
                "assessment.crash", task_id=context.task_id, error=traceback.format_exc()
            )
            text = f"The green agent failed with an internal error: {exc!r}."
            await updater.failed(updater.new_agent_message([new_text_part(text)]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id and context.context_id
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel(updater.new_agent_message([new_text_part("Assessment canceled.")]))

    async def _assess(self, context: RequestContext, updater: TaskUpdater) -> None:
        message = context.message
        assert message is not None
        try:
            request = parse_request(get_message_text(message), get_data_parts(message.parts))
        except InvalidAssessment as exc:
            raise _Rejected(str(exc)) from None
        instances = await self._instances(request)
        settings, concurrency, capped = self._run_settings(request)
        client = await self._docker()
        run_id = new_run_id()
        run_dir = RunDir(settings.runs_dir / run_id)
        ctx = RunContext(settings, client, run_id, run_dir)
        name = await participant_card_name(request.participant_url)
        participant_id = name or request.participant_url
        run_dir.write_config(
            {
                "run_id": run_id,
                "source": "a2a",
                "task_id": context.task_id,
                "request": request.model_dump(mode="json", by_alias=True),
                "participant_id": participant_id,
                "instances": [i.instance_id for i in instances],
                "settings": settings.model_dump(mode="json", exclude={"anthropic_api_key"}),
            }
        )
        note = f", concurrency capped at {concurrency}" if capped else ""
        card_note = "" if name else " (its agent card could not be read)"
        await updater.start_work(
            updater.new_agent_message(
                [
                    new_text_part(
                        f"Evaluating {len(instances)} instance(s) against {request.role} at "
                        f"{request.participant_url}{card_note}: run {run_id}, "
                        f"{concurrency} at a time{note}."
                    ),
                    new_data_part(
                        {
                            "type": "assessment_started",
                            "run_id": run_id,
                            "total": len(instances),
                            "concurrency": concurrency,
                            "instance_ids": [i.instance_id for i in instances],
                        }
                    ),
                ]
            )
        )
        self.log.info("assessment.start", run_id=run_id, instances=len(instances))
        results = await self._evaluate(ctx, instances, request, concurrency, updater)
        path = run_dir.write_leaderboard(request.role, participant_id, results)
        payload = json.loads(path.read_text(encoding="utf-8"))
        row = LeaderboardRow.model_validate(payload["results"][0])
        data = {
            **payload["results"][0],
            "benchmark": payload["benchmark"],
            "run_id": run_id,
            "participant_id": participant_id,
            "instances": [instance_summary(r) for r in results],
        }
        await updater.add_artifact(
            [new_text_part(summary_text(row, participant_id, run_id)), new_data_part(data)],
            name=ARTIFACT_NAME,
        )
        await updater.complete()
        self.log.info("assessment.done", run_id=run_id, resolved_pct=row.resolved_pct)

    async def _instances(self, request: AssessmentRequest) -> list[Instance]:
        s = self.settings
        try:
            async with self._dataset_lock:
                dataset = await asyncio.to_thread(load_instances, s.dataset, s.dataset_split)
        except UserError as exc:
            raise _Failed(f"The green agent cannot load its dataset {s.dataset}: {exc}") from None
        try:
            chosen = select(dataset, **request.selection().model_dump())
        except UserError as exc:
            raise _Rejected(f"The instance selection is invalid: {exc}") from None
        if not chosen:
            raise _Rejected(
                "The instance selection picks no instance. Fix: check instance_ids, pattern, "
                "repo, count and shard against the dataset."
            )
        return chosen

    def _run_settings(self, request: AssessmentRequest) -> tuple[Settings, int, bool]:
        """The run's settings; concurrency is capped at what the host allows."""
        host_limit = self.settings.concurrency or default_concurrency()
        wanted = request.config.concurrency or host_limit
        concurrency = min(wanted, host_limit)
        overrides = request.to_settings_overrides() | {"concurrency": concurrency}
        return self.settings.model_copy(update=overrides), concurrency, wanted > host_limit

    async def _docker(self) -> docker.DockerClient:
        try:
            return await asyncio.to_thread(connect)
        except DockerUnavailable as exc:
            raise _Failed(f"The green agent cannot evaluate: {exc}") from None

    async def _evaluate(
        self,
        ctx: RunContext,
        instances: list[Instance],
        request: AssessmentRequest,
        concurrency: int,
        updater: TaskUpdater,
    ) -> list[InstanceResult]:
        async def working(parts: list[Part]) -> None:
            await updater.update_status(
                TaskState.TASK_STATE_WORKING, updater.new_agent_message(parts)
            )

        def on_event(event: ProgressEvent) -> Awaitable[None] | None:
            if event.kind == "finished" and event.result is not None:
                summary = instance_summary(event.result)
                summary |= {"type": "instance_result", "done": event.done, "total": event.total}
                return working(
                    [
                        new_text_part(progress_text(event.done, event.total, event.result)),
                        new_data_part(summary),
                    ]
                )
            if event.kind == "heartbeat":
                text = heartbeat_text(event.done, event.total, event.in_flight, event.elapsed)
                return working(
                    [
                        new_text_part(text),
                        new_data_part(
                            {
                                "type": "heartbeat",
                                "done": event.done,
                                "total": event.total,
                                "statuses": event.statuses,
                                "in_flight": event.in_flight,
                                "elapsed": round(event.elapsed, 1),
                            }
                        ),
                    ]
                )
            return None

        return await run_evaluation(
            ctx,
            instances,
            request.participant_url,
            concurrency=concurrency,
            on_event=on_event,
            heartbeat=self.heartbeat,
        )


def build_app(
    settings: Settings, card_url: str, *, heartbeat: float = DEFAULT_HEARTBEAT
) -> Starlette:
    """The green agent's Starlette app: A2A JSON-RPC (1.0 and 0.3) at ``/``, the card at the
    well-known path advertising ``card_url``."""
    return build_a2a_app(AssessmentExecutor(settings, heartbeat=heartbeat), GREEN_CARD, card_url)


def serve(
    host: str = "0.0.0.0",
    port: int = 9009,
    card_url: str | None = None,
    *,
    settings: Settings | None = None,
    heartbeat: float = DEFAULT_HEARTBEAT,
) -> None:
    """Serve the green agent until interrupted."""
    settings = settings or load_settings()
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    url = card_url or (f"http://[{shown}]:{port}/" if ":" in shown else f"http://{shown}:{port}/")
    get_logger().info("green-agent.serve", host=host, port=port, card_url=url)
    with contextlib.suppress(KeyboardInterrupt):
        uvicorn.run(build_app(settings, url, heartbeat=heartbeat), host=host, port=port)


def serve_command(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "0.0.0.0",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 9009,
    card_url: Annotated[
        str | None,
        typer.Option(help="URL the agent card advertises (default: http://<host>:<port>/)."),
    ] = None,
    heartbeat: Annotated[
        float,
        typer.Option(min=1.0, help="Seconds between progress heartbeats while instances run."),
    ] = DEFAULT_HEARTBEAT,
) -> None:
    """Serve the green agent over A2A (JSON-RPC, A2A 1.0 and 0.3) for assessment requests."""
    serve(host, port, card_url, settings=load_settings(), heartbeat=heartbeat)
