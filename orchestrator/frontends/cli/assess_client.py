"""``swe-green assess``: send an assessment to a running ``swe-green serve`` and follow it.

The request is the one an AgentBeats runner sends (see :mod:`.assessment`): one participant
under a role, and an optional ``config`` object. The client streams the task over A2A
(JSON-RPC), prints each progress update as it comes, then the result: the artifact's summary
and, with ``--output``, its data part (the leaderboard row and the per-instance results) as
JSON. The exit status follows the task's end: 0 completed, 2 rejected (the request is at
fault; the reason is printed), 3 failed or canceled (the green agent could not evaluate, or
was stopped; the reason and its fix are printed) and 3 too when the green agent goes away
before the task ends (it died: not the request's fault), 130 interrupted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientError
from a2a.helpers import get_data_parts, new_text_part
from a2a.types import Message, Part, Role, SendMessageRequest, TaskState

from orchestrator.errors import UserError
from orchestrator.frontends.shared.compat03 import integral

EXIT_COMPLETED = 0
EXIT_REJECTED = 2
EXIT_FAILED = 3
EXIT_OTHER = 1
_EXITS = {
    "TASK_STATE_COMPLETED": EXIT_COMPLETED,
    "TASK_STATE_REJECTED": EXIT_REJECTED,
    "TASK_STATE_FAILED": EXIT_FAILED,
    "TASK_STATE_CANCELED": EXIT_FAILED,
}
# states after which the task goes on: a stream that ends in one of them was cut
_UNFINISHED = ("TASK_STATE_UNSPECIFIED", "TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")


class ServerWentAway(UserError):
    """The green agent stopped answering before the task ended (exit status 3: the
    assessment failed, and not through the request's fault)."""


@dataclass
class Update:
    """One event of the task as the client shows it: its state, its text, its data parts."""

    state: str
    text: str
    data: list[dict[str, Any]] = field(default_factory=list)
    artifact: bool = False


@dataclass
class Outcome:
    """How the task ended: its last state and message, and the artifact's text and data."""

    task_id: str = ""
    state: str = "TASK_STATE_UNSPECIFIED"
    message: str = ""
    artifact_text: str = ""
    artifact_data: dict[str, Any] | None = None

    @property
    def exit_code(self) -> int:
        return _EXITS.get(self.state, EXIT_OTHER)


def build_request(participant: str, role: str, config: str | None) -> str:
    """The request's JSON text; a UserError when ``config`` is not a JSON object."""
    if not participant.startswith(("http://", "https://")):
        raise UserError(
            f"--participant {participant!r} is not an http(s) URL.",
            "pass the participant's A2A URL, e.g. http://127.0.0.1:9019/.",
        )
    parsed: object = {}
    if config:
        try:
            parsed = json.loads(config)
        except ValueError as exc:
            raise UserError(
                f"--config is not JSON ({exc}).", "write it like '{\"count\": 3}'."
            ) from None
        if not isinstance(parsed, dict):
            raise UserError("--config is not a JSON object.", "write it like '{\"count\": 3}'.")
    return json.dumps({"participants": {role: participant}, "config": parsed})


def _text(parts: Any) -> str:
    return "\n".join(part.text for part in parts if part.HasField("text"))


def _data(parts: Any) -> list[dict[str, Any]]:
    return [integral(item) for item in get_data_parts(parts) if isinstance(item, dict)]


async def assess(
    server: str,
    request: str,
    *,
    token: str | None = None,
    on_update: Callable[[Update], None] = lambda update: None,
    timeout: float = 30.0,
) -> Outcome:
    """Send ``request`` to the green agent at ``server`` and follow its task to the end."""
    headers = {"Authorization": f"Bearer {token}"} if token else None
    outcome = Outcome()
    async with httpx.AsyncClient(
        timeout=httpx.Timeout(timeout, read=None), headers=headers
    ) as http:
        try:
            card = await A2ACardResolver(http, server).get_agent_card()
        except Exception as exc:  # noqa: BLE001 - any failure: the server is not usable
            raise UserError(
                f"No green agent answers at {server} ({type(exc).__name__}: {exc}).",
                "start it with `swe-green serve`, or check the URL.",
            ) from None
        client = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
        message = Message(
            role=Role.ROLE_USER,
            message_id=str(uuid.uuid4()),
            parts=[new_text_part(request)],
        )
        try:
            async for event in client.send_message(SendMessageRequest(message=message)):
                _follow(event, outcome, on_update)
        except A2AClientError as exc:
            if "HTTP Error 401" in str(exc) or "HTTP Error 403" in str(exc):
                raise UserError(
                    f"The green agent at {server} refused the request: {str(exc).splitlines()[0]}.",
                    "pass its token with --token (or SWE_GREEN_SERVE_TOKEN).",
                ) from None
            raise ServerWentAway(
                f"The green agent at {server} stopped answering or answered with an error "
                f"before the task ended: {str(exc).splitlines()[0]}.",
                "check the server's log; the run directory keeps what was done.",
            ) from None
        except httpx.HTTPError as exc:
            raise ServerWentAway(
                f"The green agent at {server} stopped answering ({type(exc).__name__}: {exc}).",
                "check the server's log; the run directory keeps what was done.",
            ) from None
        finally:
            with contextlib.suppress(Exception):  # the connection may be gone
                await client.close()
    if outcome.state in _UNFINISHED:
        raise ServerWentAway(
            f"The green agent at {server} ended the stream before the task ended (its last "
            f"state: {outcome.state.removeprefix('TASK_STATE_').lower()}).",
            "check the server's log; the run directory keeps what was done.",
        )
    return outcome


def _follow(event: Any, outcome: Outcome, on_update: Callable[[Update], None]) -> None:
    """Fold one streamed event into ``outcome`` and show it."""
    if event.HasField("task"):
        outcome.task_id = event.task.id
        outcome.state = TaskState.Name(event.task.status.state)
    elif event.HasField("status_update"):
        status = event.status_update.status
        outcome.state = TaskState.Name(status.state)
        parts: list[Part] = list(status.message.parts)
        outcome.message = _text(parts)
        on_update(Update(outcome.state, outcome.message, _data(parts)))
    elif event.HasField("artifact_update"):
        parts = list(event.artifact_update.artifact.parts)
        outcome.artifact_text = _text(parts)
        datas = _data(parts)
        outcome.artifact_data = datas[0] if datas else None
        on_update(Update(outcome.state, outcome.artifact_text, datas, artifact=True))
    elif event.HasField("message"):
        outcome.message = _text(list(event.message.parts))
        on_update(Update(outcome.state, outcome.message))


def run_assessment(
    server: str, request: str, token: str | None, on_update: Callable[[Update], None]
) -> Outcome:
    """:func:`assess` for the CLI (synchronous). SIGINT and SIGTERM cancel it, and again each
    second until it has stopped (a cancellation that lands inside the HTTP client's own
    timeout scope can be absorbed there), and it raises KeyboardInterrupt."""
    return asyncio.run(_stoppable(assess(server, request, token=token, on_update=on_update)))


async def _stoppable(work: Coroutine[Any, Any, Outcome]) -> Outcome:
    """``work``, cancelled by SIGINT or SIGTERM until it stops (see :func:`run_assessment`)."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(work)
    stopping: list[bool] = []

    def stop() -> None:
        if not task.done():
            stopping.append(True)
            task.cancel()
            loop.call_later(_CANCEL_AGAIN, stop)

    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in previous:
        loop.add_signal_handler(sig, stop)
    try:
        return await task
    except asyncio.CancelledError:
        if stopping:
            raise KeyboardInterrupt from None
        raise
    finally:
        for sig, handler in previous.items():
            loop.remove_signal_handler(sig)
            signal.signal(sig, handler)


_CANCEL_AGAIN = 1.0  # seconds between the cancellations of a stopping assessment
