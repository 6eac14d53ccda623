"""The green agent on A2A: receives an assessment request, evaluates, answers with the results.

One request is one A2A task (see :mod:`orchestrator.assessment` for the request):

- a malformed request, a participant URL that is not http(s) or not on the allow-list, or a
  selection that picks nothing, ends the task ``rejected`` with a text saying what is wrong;
  unknown config keys are ignored and named in the messages and the summary;
- otherwise the task goes ``working``: a status update when the run starts, one per finished
  instance (text ``3/10 demo__calc-1: resolved`` and a data part with the instance's result)
  and a heartbeat every ``heartbeat`` seconds while instances are in flight;
- it ends ``completed`` with one artifact: a short summary text (not JSON) and a data part
  holding the leaderboard row (DESIGN "Results") plus the per-instance results under
  ``instances``. The run's directory (``runs_dir/<run id>``) gets ``results.json`` too.
- a failure that is not the requester's doing (no Docker daemon, no base image, a dataset
  the server cannot read, every instance failing before its participant was called, an
  internal error) ends the task ``failed`` with the reason and what to fix; the server stays up.
  Single instances that fail stay per-instance errors in a ``completed`` task.
- a shard that the selection leaves empty ends ``completed`` with a summary and no row.

Several assessments may run at once; each has its own run id and directory. Their instances
share the host's slots (:class:`HostSlots`, ``concurrency`` in total): a later assessment
queues and says so. Numbers in data parts reach A2A 0.3 clients as integers where they are
whole (:mod:`orchestrator.compat03`). Optional: a bearer token on every A2A call, an
allow-list of participant hosts; kept participant containers are capped.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import fnmatch
import hmac
import json
import re
import traceback
import uuid
from collections.abc import AsyncIterator, Awaitable
from typing import Annotated, Any
from urllib.parse import urlparse

import docker
import httpx
import typer
import uvicorn
from a2a.client import A2ACardResolver
from a2a.helpers import get_data_parts, get_message_text, new_data_part, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCard,
    AgentSkill,
    HTTPAuthSecurityScheme,
    Part,
    SecurityScheme,
    TaskState,
)
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from . import compat03
from .assessment import EXAMPLE, AssessmentRequest, InvalidAssessment, parse_request
from .context import RunContext
from .docker_engine import connect
from .errors import DockerUnavailable, UserError
from .grading import LeaderboardRow
from .housekeeping import list_containers
from .images import base_pythons
from .instances import load_instances, select
from .log import get_logger
from .models import Instance, InstanceResult, Reason, Status
from .participants.a2a_parts import enqueue_task_once
from .participants.server import CardInfo, agent_card
from .results import RunDir
from .scheduler import ProgressEvent, default_concurrency, run_evaluation
from .settings import Settings, load_settings

DEFAULT_HEARTBEAT = 20.0
ARTIFACT_NAME = "swe-bench-verified-result"
_CARD_TIMEOUT = 10.0
# the card's path for clients older than A2A 0.3 (0.3 and 1.x read agent-card.json)
LEGACY_CARD_PATH = "/.well-known/agent.json"
CARD_PATHS = ("/.well-known/agent-card.json", LEGACY_CARD_PATH)
# errors that say the host cannot evaluate, not that the participant did badly
_INFRA_REASONS = (Reason.INFRASTRUCTURE, Reason.ENVIRONMENT)

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
                "Config keys: instance_ids, pattern, repo, count (num_instances, max_rows; "
                "-1 = all), shard ('i/n') or shard_index (0-based) + num_shards, concurrency "
                "(max_concurrent_rows), setup_strategy, instance_timeout, tool_timeout, "
                "test_timeout, participant_timeout, max_tool_calls, validate. Unknown keys "
                "are ignored and named in the summary."
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


def summary_text(row: LeaderboardRow, participant_id: str, run_id: str, ignored: str = "") -> str:
    """The artifact's human summary: one paragraph of prose (never valid JSON)."""
    counts = [
        f"{getattr(row, f'{status.value}_count')} {status.value}"
        for status in Status
        if getattr(row, f"{status.value}_count")
    ]
    return prose(
        f"SWE-bench Verified: {participant_id} resolved {row.resolved_count} of "
        f"{row.total_instances} instance(s) ({row.resolved_pct:.1%}). "
        f"Outcomes: {', '.join(counts) or 'none'}. "
        f"FAIL_TO_PASS tests passing: {row.fail_to_pass_passed_pct:.1%}; "
        f"PASS_TO_PASS tests passing: {row.pass_to_pass_passed_pct:.1%}. Run {run_id}."
        + (f" {ignored}" if ignored else "")
    )


def leaderboard_data(
    run_dir: RunDir,
    request: AssessmentRequest,
    participant_id: str,
    results: list[InstanceResult],
) -> tuple[LeaderboardRow, dict[str, Any]]:
    """Write the run's ``results.json``; the leaderboard row and the artifact's data part: the
    row's keys (what the leaderboard queries read) plus the run, the participant's role (the
    key of its id among the submission's ids), the shard and the per-instance results."""
    path = run_dir.write_leaderboard(request.role, participant_id, results)
    payload = json.loads(path.read_text(encoding="utf-8"))
    row = LeaderboardRow.model_validate(payload["results"][0])
    data = {
        **payload["results"][0],
        "benchmark": payload["benchmark"],
        "run_id": run_dir.path.name,
        "participant_role": request.role,
        "participant_id": participant_id,
        "shard": request.selection().shard or "1/1",
        "instances": [instance_summary(r) for r in results],
    }
    return row, data


def prose(text: str) -> str:
    """``text``, made sure not to parse as JSON (the gateway would take it for a result)."""
    try:
        json.loads(text)
    except ValueError:
        return text
    return f"Summary: {text}"


class HostSlots:
    """The host's instance slots, shared by every assessment of this server.

    Each instance holds one slot from its start to its result; an assessment whose instances
    wait for one is queued (and says so). ``capacity`` is the server's ``concurrency``.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.in_use = 0
        self.waiting = 0
        self._semaphore: asyncio.Semaphore | None = None

    @property
    def busy(self) -> bool:
        return self.in_use + self.waiting >= self.capacity

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.capacity)
        self.waiting += 1
        try:
            await self._semaphore.acquire()
        finally:
            self.waiting -= 1
        self.in_use += 1
        try:
            yield
        finally:
            self.in_use -= 1
            self._semaphore.release()


def host_allowed(url: str, patterns: list[str]) -> bool:
    """Whether the URL's host matches one of ``patterns`` (globs; none = every host)."""
    if not patterns:
        return True
    host = (urlparse(url).hostname or "").lower()
    return any(fnmatch.fnmatchcase(host, pattern.lower()) for pattern in patterns)


def split_hosts(value: str | None) -> list[str]:
    return [part for part in re.split(r"[,\s]+", value or "") if part]


def infrastructure_failure(
    results: list[InstanceResult], reached_participant: set[str]
) -> str | None:
    """Why the host could not evaluate at all, or None: every instance ended in an
    infrastructure or environment error before its participant was called."""
    if not results:
        return None
    for result in results:
        if (
            result.status != Status.ERROR
            or result.reason not in _INFRA_REASONS
            or result.tool_calls
            or result.instance_id in reached_participant
        ):
            return None
    messages = list(
        dict.fromkeys(
            (r.message.strip().splitlines() or [r.reason.value])[0][:300] for r in results
        )
    )
    shown = "; ".join(messages[:3]) + (
        f"; and {len(messages) - 3} more" if len(messages) > 3 else ""
    )
    return (
        f"The green agent could not evaluate: all {len(results)} instance(s) failed before the "
        f"participant was called ({shown}). Fix the green agent's host: a Docker engine it can "
        "use, the base images (`swe-green images build`), access to the repositories "
        "(mirror_dir or the network), a recipe or an API key for the setup agent, then run "
        "the assessment again."
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
        self.slots = HostSlots(settings.concurrency or default_concurrency())
        self.allowed_hosts = split_hosts(settings.serve_allowed_hosts)

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
            text = f"The green agent failed with an internal error: {type(exc).__name__}: {exc}."
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
        if not host_allowed(request.participant_url, self.allowed_hosts):
            host = urlparse(request.participant_url).hostname
            raise _Rejected(
                f"Participant host {host!r} is not on this green agent's allow-list "
                f"({', '.join(self.allowed_hosts)}). Fix: use an allowed participant URL, or "
                "ask the operator to add the host (serve_allowed_hosts)."
            )
        instances = await self._instances(request)
        if not instances:
            await self._empty_shard(request, updater)
            return
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
                "settings": settings.model_dump(
                    mode="json", exclude={"anthropic_api_key", "serve_token"}
                ),
            }
        )
        note = f", concurrency capped at {concurrency}" if capped else ""
        card_note = "" if name else " (its agent card could not be read)"
        queued = self.slots.busy
        queue_note = (
            f" Queued: all {self.slots.capacity} of the host's instance slots are busy with "
            "other assessments; instances start as slots free up."
            if queued
            else ""
        )
        ignored = request.ignored_text()
        await updater.start_work(
            updater.new_agent_message(
                [
                    new_text_part(
                        f"Evaluating {len(instances)} instance(s) against {request.role} at "
                        f"{request.participant_url}{card_note}: run {run_id}, "
                        f"{concurrency} at a time{note}.{queue_note}"
                        + (f" {ignored}" if ignored else "")
                    ),
                    new_data_part(
                        {
                            "type": "assessment_started",
                            "run_id": run_id,
                            "total": len(instances),
                            "concurrency": concurrency,
                            "queued": queued,
                            "host_slots": self.slots.capacity,
                            "ignored_keys": request.ignored,
                            "instance_ids": [i.instance_id for i in instances],
                        }
                    ),
                ]
            )
        )
        self.log.info("assessment.start", run_id=run_id, instances=len(instances))
        reached: set[str] = set()
        try:
            results = await self._evaluate(ctx, instances, request, concurrency, updater, reached)
        finally:
            await asyncio.to_thread(self._prune_kept, client)
        broken = infrastructure_failure(results, reached)
        if broken:
            raise _Failed(broken)
        row, data = leaderboard_data(run_dir, request, participant_id, results)
        text = summary_text(row, participant_id, run_id, ignored)
        await updater.add_artifact([new_text_part(text), new_data_part(data)], name=ARTIFACT_NAME)
        await updater.complete()
        self.log.info("assessment.done", run_id=run_id, resolved_pct=row.resolved_pct)

    async def _instances(self, request: AssessmentRequest) -> list[Instance]:
        """The selected instances; empty only for a shard the selection leaves empty."""
        s = self.settings
        try:
            async with self._dataset_lock:
                dataset = await asyncio.to_thread(load_instances, s.dataset, s.dataset_split)
        except UserError as exc:
            raise _Failed(f"The green agent cannot load its dataset {s.dataset}: {exc}") from None
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
            f"SWE-bench Verified: shard {shard} of this selection holds no instance "
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
            "keep_containers": self.settings.serve_keep_containers,
        }
        return self.settings.model_copy(update=overrides), concurrency, wanted > host_limit

    async def _docker(self) -> docker.DockerClient:
        """The Docker client, once the engine answers and has a base image."""
        try:
            client = await asyncio.to_thread(connect)
        except DockerUnavailable as exc:
            raise _Failed(f"The green agent cannot evaluate: {exc}") from None
        base = f"{self.settings.image_prefix}/base"
        try:
            # by image inspect, which Amber's Docker gateway allows (it refuses listing)
            pythons = await asyncio.to_thread(base_pythons, client, self.settings)
        except docker.errors.DockerException as exc:
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
        return client

    def _prune_kept(self, client: docker.DockerClient) -> None:
        """Keep at most ``serve_max_kept_containers`` stopped participant containers of
        assessments (run ids ``a2a-*``); the oldest go first. Never touches running ones."""
        cap = self.settings.serve_max_kept_containers
        try:
            kept = [
                info
                for info in list_containers(client)  # newest first
                if info.run_id.startswith("a2a-") and info.status not in ("running", "created")
            ]
            for info in kept[cap:]:
                client.containers.get(info.id).remove(force=True, v=True)
                self.log.info("kept-container.removed", container=info.name, cap=cap)
        except docker.errors.DockerException as exc:
            self.log.warning("kept-container.prune_failed", error=str(exc))

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
                queued = sum(phase == "queued" for phase in event.in_flight.values())
                if queued:
                    text += (
                        f"; {queued} queued for the host's {self.slots.capacity} instance "
                        "slot(s), busy with other assessments"
                    )
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
                                "queued": queued,
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
            gate=self.slots.slot,
        )


class BearerAuth:
    """ASGI middleware: every request but the agent card needs ``Authorization: Bearer
    <token>``; others get 401 with a JSON body saying so."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (
            scope["method"] in ("GET", "HEAD") and scope["path"] in CARD_PATHS
        ):
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"authorization", b"")
        if hmac.compare_digest(given, self.expected):
            await self.app(scope, receive, send)
            return
        response = JSONResponse(
            {
                "error": "unauthorized",
                "message": "This green agent needs 'Authorization: Bearer <token>' "
                "(its agent card declares the 'bearer' scheme).",
            },
            status_code=401,
            headers={"WWW-Authenticate": 'Bearer realm="swe-green"'},
        )
        await response(scope, receive, send)


def green_card(card_url: str, *, bearer: bool = False) -> AgentCard:
    """The green agent's card; with ``bearer`` it declares the bearer scheme as required."""
    card = agent_card(GREEN_CARD, card_url)
    if bearer:
        card.security_schemes["bearer"].CopyFrom(
            SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="bearer",
                    description="The token the green agent's operator set (serve_token).",
                )
            )
        )
        card.security_requirements.add().schemes["bearer"].SetInParent()
    return card


def build_app(
    settings: Settings, card_url: str, *, heartbeat: float = DEFAULT_HEARTBEAT
) -> Starlette:
    """The green agent's Starlette app: A2A JSON-RPC (1.0 and 0.3) at ``/``, the card at the
    well-known paths (``agent-card.json``, and the legacy ``agent.json``) advertising
    ``card_url``; with ``settings.serve_token`` every other call needs that bearer token."""
    compat03.install()
    token = settings.serve_token or None
    card = green_card(card_url, bearer=bool(token))
    handler = DefaultRequestHandler(
        agent_executor=AssessmentExecutor(settings, heartbeat=heartbeat),
        task_store=InMemoryTaskStore(),
        agent_card=card,
    )
    routes = [
        *create_agent_card_routes(card),
        *create_agent_card_routes(card, card_url=LEGACY_CARD_PATH),
        *create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=True),
    ]
    app = Starlette(routes=routes)
    if token:
        app.add_middleware(BearerAuth, token=token)
    return app


def serve(
    host: str = "127.0.0.1",
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
    get_logger().info(
        "green-agent.serve",
        host=host,
        port=port,
        card_url=url,
        bearer_token=bool(settings.serve_token),
        allowed_hosts=settings.serve_allowed_hosts or "any",
        keep_containers=settings.serve_keep_containers,
    )
    with contextlib.suppress(KeyboardInterrupt):
        uvicorn.run(build_app(settings, url, heartbeat=heartbeat), host=host, port=port)


def serve_command(
    host: Annotated[
        str,
        typer.Option(help="Address to listen on (0.0.0.0 for every interface, as in a container)."),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 9009,
    card_url: Annotated[
        str | None,
        typer.Option(help="URL the agent card advertises (default: http://<host>:<port>/)."),
    ] = None,
    heartbeat: Annotated[
        float,
        typer.Option(min=1.0, help="Seconds between progress heartbeats while instances run."),
    ] = DEFAULT_HEARTBEAT,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            help="Require 'Authorization: Bearer TOKEN' on A2A calls (setting serve_token).",
            show_default=False,
        ),
    ] = None,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-participant-host",
            help="Allow only participants on this host (glob; repeat; setting "
            "serve_allowed_hosts).",
        ),
    ] = None,
    keep_containers: Annotated[
        str | None,
        typer.Option(help="never, on_failure or always (setting serve_keep_containers)."),
    ] = None,
    max_kept: Annotated[
        int | None,
        typer.Option(
            "--max-kept-containers",
            min=0,
            help="Kept containers of assessments at most (setting serve_max_kept_containers).",
        ),
    ] = None,
) -> None:
    """Serve the green agent over A2A (JSON-RPC, A2A 1.0 and 0.3) for assessment requests."""
    settings = load_settings(
        serve_token=token,
        serve_allowed_hosts=",".join(allow_host) if allow_host else None,
        serve_keep_containers=keep_containers,
        serve_max_kept_containers=max_kept,
    )
    serve(host, port, card_url, settings=settings, heartbeat=heartbeat)
