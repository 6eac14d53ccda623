"""``swe-green assess`` against a real ``serve`` on 127.0.0.1: progress streamed, the result
printed, the exit status the task's end; and a participant that cannot be evaluated fails
the task with the reason in its artifact, as ``run`` refuses it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

from orchestrator.participant.serving import serve_asgi_in_thread
from orchestrator.settings import Settings

from .cli_in_process import swe_green
from .test_server import assess, fast_settings, green_agent  # noqa: F401 - fixture

SWE_GREEN = str(Path(sys.executable).parent / "swe-green")
EMPTY_SHARD = '{"pattern": "demo__*", "shard_index": 3, "num_shards": 4}'


def _assess_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``swe-green assess ARGS`` in this process (the server is in a thread of it)."""
    return swe_green("assess", *args, env=env, columns=200)


@contextmanager
def card_server(body: bytes, status: int = 200) -> Iterator[str]:
    """An HTTP server whose agent card is ``body``: a participant that is no A2A agent."""

    async def card(request: object) -> Response:
        return Response(body, status_code=status, media_type="application/json")

    app = Starlette(routes=[Route("/.well-known/agent-card.json", card)])
    with serve_asgi_in_thread(lambda url: app, "not-an-agent") as url:
        yield url


def test_assess_prints_the_result_of_a_completed_task(fast_settings: Settings) -> None:  # noqa: F811
    with green_agent(fast_settings) as url:
        done = _assess_cli(url, "--participant", "http://127.0.0.1:9/", "--config", EMPTY_SHARD)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "shard 4/4 of this selection holds no instance" in done.stdout
    assert "completed" in done.stdout.splitlines()[-1]


def test_assess_exits_2_with_the_reason_of_a_rejected_request(fast_settings: Settings) -> None:  # noqa: F811
    with green_agent(fast_settings) as url:
        done = _assess_cli(url, "--participant", "http://127.0.0.1:9/", "--config", '{"count": 0}')
    assert done.returncode == 2, done.stdout + done.stderr
    assert "rejected:" in done.stderr and "count: Input should be greater" in done.stderr


def test_assess_refuses_bad_input_before_sending(tmp_path: Path) -> None:
    cases = [
        (["http://127.0.0.1:9/", "--participant", "agent:9019"], "is not an http(s) URL"),
        (["http://127.0.0.1:9/", "--participant", "http://a/", "--config", "{"], "not JSON"),
        (["http://127.0.0.1:9/", "--participant", "http://a/", "--config", "[1]"], "object"),
        (["http://127.0.0.1:9/", "--participant", "http://a/"], "No green agent answers"),
    ]
    for args, words in cases:
        done = _assess_cli(*args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert words in done.stderr and "Traceback" not in done.stderr, (args, done.stderr)


def test_assess_sends_the_servers_token(fast_settings: Settings) -> None:  # noqa: F811
    settings = fast_settings.replace(**{"serve_token": "s3cret"})
    with green_agent(settings) as url:
        refused = _assess_cli(url, "--participant", "http://127.0.0.1:9/", "--config", EMPTY_SHARD)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "refused the request: HTTP Error 401" in refused.stderr
        assert "--token" in refused.stderr and "Traceback" not in refused.stderr
        done = _assess_cli(
            url, "--participant", "http://127.0.0.1:9/", "--config", EMPTY_SHARD,
            env={"SWE_GREEN_SERVE_TOKEN": "s3cret"},
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.container
def test_a_participant_that_cannot_be_evaluated_fails_the_task(
    fast_settings: Settings,  # noqa: F811
    env_settings: Settings,
    tmp_path: Path,
) -> None:
    """Unreachable, an HTTP error, a card that is no JSON object: ``failed`` with the reason
    in the status and in the artifact, before any environment is built (no run directory)."""
    settings = fast_settings.replace(**{"image_prefix": env_settings.environment.image_prefix})
    request = '{"instance_ids": ["demo__calc-1"]}'
    with (
        green_agent(settings) as url,
        card_server(b"[]") as not_an_object,
        card_server(b"{}", status=500) as broken,
    ):
        for participant, reason in [
            ("http://127.0.0.1:9/", "does not answer (ConnectError"),
            (not_an_object, "is not a JSON object"),
            (broken, "answers HTTP 500"),
        ]:
            out = tmp_path / "result.json"
            done = _assess_cli(url, "--participant", participant, "--config", request,
                               "--output", str(out))  # fmt: skip
            assert done.returncode == 3, done.stdout + done.stderr
            assert reason in done.stderr, done.stderr
            data = json.loads(out.read_text())
            assert data["type"] == "assessment_failed" and reason in data["reason"]
            assert "Fix: start the participant" in data["reason"]
    assert not list(settings.storage.runs_dir.glob("*")), "a run directory was made"
