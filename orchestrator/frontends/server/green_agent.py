"""The green agent on A2A: receives an assessment request, evaluates, answers with the results.

One request is one A2A task (see :mod:`orchestrator.frontends.server.assessment` for the request):

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
share the host's slots (:class:`.admission.HostSlots`, ``concurrency`` in total): a later assessment
queues and says so. Numbers in data parts reach A2A 0.3 clients as integers where they are
whole (:mod:`orchestrator.frontends.shared.compat03`). Optional: a bearer token on every A2A
call, an allow-list of participant hosts (every URL the server contacts: the request's, the agent
card's interface, any redirect); kept participant containers are capped.

A stop (SIGTERM, SIGINT) cancels the assessments in progress as ``tasks/cancel`` does and waits
for their clean-up (``serve_stop_timeout`` at most); a start reaps what a dead holder (a
``serve`` killed with ``kill -9``) left (:mod:`orchestrator.housekeeping.reaper`).
"""

from __future__ import annotations

import ipaddress
import socket

import uvicorn
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import (
    AgentCard,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityScheme,
)
from starlette.applications import Starlette

from orchestrator.errors import UserError
from orchestrator.frontends.server.admission import LEGACY_CARD_PATH, BearerAuth
from orchestrator.frontends.server.assessment import EXAMPLE
from orchestrator.frontends.server.assessment_executor import AssessmentExecutor
from orchestrator.frontends.server.defaults import DEFAULT_HEARTBEAT, DEFAULT_HOST, DEFAULT_PORT
from orchestrator.frontends.shared import compat03
from orchestrator.log import get_logger
from orchestrator.participant.serving import CardInfo, agent_card, listen, run_until_stopped
from orchestrator.sandbox import BackendUnavailable
from orchestrator.settings import Settings, load_settings

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
                "are ignored and named in the summary; a misspelt 'config', 'participants' or "
                "selection key is refused."
            ),
            tags=["swe-bench", "coding", "benchmark", "green-agent"],
            examples=[EXAMPLE],
        )
    ],
)


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
    ``card_url``; with ``settings.serve.serve_token`` every other call needs that bearer token."""
    compat03.install()
    token = settings.serve.serve_token or None
    card = green_card(card_url, bearer=bool(token))
    executor = AssessmentExecutor(settings, heartbeat=heartbeat)
    handler = DefaultRequestHandler(
        agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = [
        *create_agent_card_routes(card),
        *create_agent_card_routes(card, card_url=LEGACY_CARD_PATH),
        *create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=True),
    ]
    app = Starlette(routes=routes)
    app.state.executor = executor  # a stop cancels its assessments (GreenServer)
    if token:
        app.add_middleware(BearerAuth, token=token)
    return app


def check_exposure(host: str, settings: Settings) -> None:
    """UserError when ``host`` is not a loopback address and nothing limits who may use the
    agent: no token, no allow-list of participant hosts, and ``serve_insecure`` unset."""
    serve = settings.serve
    if _loopback(host) or serve.serve_token or serve.serve_allowed_hosts or serve.serve_insecure:
        return
    raise UserError(
        f"serve would listen on {host} with no token and no allow-list: anyone who reaches the "
        "port could start assessments and make the agent fetch any URL",
        "pass --token (SWE_GREEN_SERVE_TOKEN) or --allow-participant-host "
        "(SWE_GREEN_SERVE_ALLOWED_HOSTS), or --insecure (SWE_GREEN_SERVE_INSECURE=true) when a "
        "network in front of it decides who connects",
    )


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    card_url: str | None = None,
    *,
    settings: Settings | None = None,
    heartbeat: float = DEFAULT_HEARTBEAT,
) -> None:
    """Serve the green agent until interrupted (:func:`check_exposure` first)."""
    settings = settings or load_settings()
    check_exposure(host, settings)
    sock = listen(host, port)  # a port in use: one line and exit 2, before anything starts
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    url = card_url or (f"http://[{shown}]:{port}/" if ":" in shown else f"http://{shown}:{port}/")
    get_logger().info(
        "green-agent.serve",
        host=host,
        port=port,
        card_url=url,
        bearer_token=bool(settings.serve.serve_token),
        allowed_hosts=settings.serve.serve_allowed_hosts or "any",
        allowed_overrides=settings.serve.serve_allowed_overrides or "none",
        keep_containers=settings.serve.serve_keep_containers,
    )
    reap_left_behind(settings)
    app = build_app(settings, url, heartbeat=heartbeat)
    config = uvicorn.Config(app, log_level="info", timeout_graceful_shutdown=5)
    server = GreenServer(config, app.state.executor, settings.serve.serve_stop_timeout)
    run_until_stopped(server, sock)


class GreenServer(uvicorn.Server):
    """uvicorn's server, whose stop (SIGTERM, SIGINT) first cancels the assessments in
    progress, as ``tasks/cancel`` does, and waits at most ``stop_timeout`` seconds for their
    instances to clean up; then it closes the connections (their streams have ended)."""

    def __init__(
        self, config: uvicorn.Config, executor: AssessmentExecutor, stop_timeout: float
    ) -> None:
        super().__init__(config)
        self.executor = executor
        self.stop_timeout = stop_timeout

    def run(self, sockets: list[socket.socket] | None = None) -> None:
        from sse_starlette.sse import AppStatus

        # the event streams end when their assessments do (the canceled status reaches the
        # client), not at the signal: sse-starlette would cut them before that status
        AppStatus.disable_automatic_graceful_drain()
        super().run(sockets)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        from sse_starlette.sse import AppStatus

        for server in self.servers:
            server.close()  # no new assessment meanwhile
        await self.executor.stop(self.stop_timeout)
        AppStatus.should_exit = True  # any stream still open ends now
        await super().shutdown(sockets)


def reap_left_behind(settings: Settings) -> None:
    """Remove what a dead holder left on the engine (a ``serve`` killed with ``kill -9``: its
    assessments' running containers, their leases); an engine that does not answer is left
    for the first assessment to report."""
    from orchestrator.housekeeping.reaper import reap_at_start
    from orchestrator.sandbox.factory import backend_from

    try:
        backend = backend_from(settings, timeout=10)
    except BackendUnavailable as exc:
        get_logger().warning("green-agent.no_engine_at_start", error=str(exc))
        return
    reap_at_start(backend, settings.storage.data_dir)
