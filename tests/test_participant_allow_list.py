"""The allow-list of participant hosts holds for every URL the green agent contacts: the
request's URL, the agent card's interface URL and any redirect. Real HTTP servers on
127.0.0.1; ``localhost`` stands for a host that is not on the list (it reaches the same
machine, so a request that slipped through would be seen by the recording server)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from orchestrator.frontends.reference_participants import running
from orchestrator.frontends.reference_participants.scripted import (
    FinalAnswer,
    Script,
    ScriptedParticipant,
)
from orchestrator.frontends.shared.participant_card import (
    CardOffAllowList,
    CardUnusable,
    read_card,
)
from orchestrator.models import Instance, Reason
from orchestrator.participant.client import ParticipantLimits, run_participant
from orchestrator.participant.serving import serve_asgi_in_thread
from orchestrator.participant.transport import HostNotAllowed, allow_list_hook
from orchestrator.settings import Settings
from orchestrator.tools.tool_protocol import ToolCall, ToolResult

FAST = ParticipantLimits(max_tool_calls=5, tool_timeout=10, instance_timeout=60, reply_timeout=20)
INSTANCE = Instance(
    instance_id="demo__hello-1",
    repo="demo/hello",
    base_commit="0" * 40,
    environment_setup_commit="0" * 40,
    problem_statement="hello.py should greet the world.",
)


@contextmanager
def recorder() -> Iterator[tuple[str, list[str]]]:
    """A server that records every request it gets; its URL on ``localhost``."""
    hits: list[str] = []

    async def record(request: Request) -> Response:
        hits.append(f"{request.method} {request.url.path}")
        return JSONResponse({"name": "internal"})

    app = Starlette(routes=[Route("/{path:path}", record, methods=["GET", "POST"])])
    with serve_asgi_in_thread(lambda url: app, "recorder") as url:
        yield url.replace("127.0.0.1", "localhost"), hits


@contextmanager
def pointing_to(target: str, *, redirect: bool) -> Iterator[str]:
    """A participant on 127.0.0.1 whose card names ``target`` as its interface, or (with
    ``redirect``) whose every URL redirects there."""

    async def card(request: Request) -> Response:
        if redirect:
            return RedirectResponse(target + request.url.path.lstrip("/"), status_code=307)
        body = {
            "name": "elsewhere",
            "url": target,
            "supportedInterfaces": [{"url": target, "protocolBinding": "JSONRPC"}],
        }
        return JSONResponse(body)

    app = Starlette(routes=[Route("/{path:path}", card, methods=["GET", "POST"])])
    with serve_asgi_in_thread(lambda url: app, "pointing") as url:
        yield url


def test_a_redirect_to_a_host_off_the_list_is_never_followed() -> None:
    with recorder() as (inside, hits), pointing_to(inside, redirect=True) as allowed:

        async def fetch() -> None:
            hook = allow_list_hook(["127.0.0.1"])
            async with httpx.AsyncClient(
                follow_redirects=True, event_hooks={"request": [hook]}
            ) as http:
                await http.get(allowed + "anything")

        with pytest.raises(HostNotAllowed, match="'localhost' is not on the green agent's"):
            asyncio.run(fetch())
        with pytest.raises(CardUnusable):
            asyncio.run(read_card(allowed, allowed_hosts=["127.0.0.1"]))
    assert hits == []


def test_a_card_naming_a_host_off_the_list_is_unusable() -> None:
    with recorder() as (inside, hits), pointing_to(inside, redirect=False) as allowed:
        with pytest.raises(CardOffAllowList) as caught:
            asyncio.run(read_card(allowed, allowed_hosts=["127.0.0.1"]))
        assert caught.value.host == urlparse(inside).hostname
        assert f"names the interface {inside}" in str(caught.value)
        assert "allow-list of participant hosts (127.0.0.1)" in str(caught.value)
        # with that host allowed (or no list) the same card is fine
        assert asyncio.run(read_card(allowed, allowed_hosts=["127.0.0.1", "localhost"]))
        assert asyncio.run(read_card(allowed))["name"] == "elsewhere"
    assert hits == []


def _no_tools(call: ToolCall, timeout: float) -> ToolResult:
    raise AssertionError("no tool call expected")


def test_the_participant_is_never_sent_the_task_through_a_card_off_the_list(
    tmp_path: Path,
) -> None:
    """The participant's card (read at an allowed host) names an interface on another host:
    the task is never posted there; the instance ends ``participant_protocol``."""
    participant = ScriptedParticipant(Script(final=FinalAnswer(text="done")))
    with running(participant) as url:
        port = urlparse(url).port
        allowed = f"http://localhost:{port}/"  # the card still names 127.0.0.1
        outcome = asyncio.run(
            run_participant(
                allowed,
                INSTANCE,
                _no_tools,
                FAST,
                tmp_path / "t.jsonl",
                tools=[],
                allowed_hosts=["localhost"],
            )  # fmt: skip
        )
        assert outcome.reason == Reason.PARTICIPANT_PROTOCOL, outcome
        assert "not on the green agent's allow-list" in outcome.message
        assert participant.states == {}
        # the same participant, with its card's host allowed, gets the task
        outcome = asyncio.run(
            run_participant(
                allowed,
                INSTANCE,
                _no_tools,
                FAST,
                tmp_path / "u.jsonl",
                tools=[],
                allowed_hosts=["localhost", "127.0.0.1"],
            )  # fmt: skip
        )
        assert outcome.reason is None, outcome
        assert len(participant.received()) == 1
    events = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert [e["event"] for e in events if e["event"] in ("send", "receive")] == []


@pytest.mark.container
def test_serve_fails_an_assessment_whose_card_leads_off_the_list(
    env_settings: Settings, tmp_path: Path
) -> None:
    """An allowed participant whose card names another host: the assessment ends ``failed``
    with the reason before any environment is built, and the other host gets nothing."""
    from .test_server import assess, final_status, green_agent

    settings = env_settings.replace(
        **{"runs_dir": tmp_path / "runs", "serve_allowed_hosts": "127.0.0.1"}
    )
    with recorder() as (inside, hits), pointing_to(inside, redirect=False) as allowed:
        request = json.dumps(
            {"participants": {"agent": allowed}, "config": {"instance_ids": ["demo__calc-1"]}}
        )
        with green_agent(settings) as url:
            state, text = final_status(assess(url, request))
    assert state == "TASK_STATE_FAILED", text
    assert f"names the interface {inside}" in text and "allow-list" in text
    # the fix says which host was refused and how to allow it, not "start the participant"
    host = urlparse(inside).hostname
    assert f"the allow-list refused the host {host!r}" in text, text
    assert f"--allow-participant-host {host}" in text and "start the participant" not in text
    assert hits == []
    assert not list((tmp_path / "runs").glob("*"))
