"""The green agent's A2A server: real servers on 127.0.0.1, real clients (a2a-sdk 1.3 here, and
0.3 in its own venv like the AgentBeats runner), real containers for the acceptance test."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlparse

import docker
import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import get_data_parts, new_data_part, new_text_part
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Role,
    SendMessageRequest,
    StreamResponse,
    TaskState,
)
from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette

from orchestrator.frontends.server.admission import HostSlots, split_hosts
from orchestrator.frontends.server.assessment_text import (
    finished_parts,
    heartbeat_parts,
    infrastructure_failure,
    progress_text,
    summary_text,
)
from orchestrator.frontends.server.green_agent import build_app
from orchestrator.grading.classify import LeaderboardRow
from orchestrator.models import CaseGroups as Groups
from orchestrator.models import InstanceResult, Reason, Status
from orchestrator.participant.serving import serve_asgi_in_thread
from orchestrator.participant.transport import host_allowed, tls_context
from orchestrator.settings import Settings
from tests.test_results import leaderboard_rows

FIXTURES = Path(__file__).parent / "fixtures"
A2A03_PYTHON = os.environ.get("SWE_GREEN_A2A03_PYTHON")
SYNTHETIC_IDS = ["demo__calc-1", "demo__textkit-1", "demo__units-1"]


@contextlib.contextmanager
def green_agent(settings: Settings, heartbeat: float = 20.0) -> Iterator[str]:
    """The green agent's app served by uvicorn in a thread on a free port; yields its URL."""
    with serve_asgi_in_thread(
        lambda url: build_app(settings, url, heartbeat=heartbeat), "green"
    ) as url:
        yield url


async def _send(url: str, text: str, headers: dict[str, str] | None = None) -> list[dict]:
    """Send ``text`` as one message, streaming; every event as a dict (proto JSON names)."""
    timeout = httpx.Timeout(30.0, read=None)
    async with httpx.AsyncClient(timeout=timeout, headers=headers, verify=tls_context()) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        client = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
        message = Message(
            role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[new_text_part(text)]
        )
        events: list[StreamResponse] = []
        async for event in client.send_message(SendMessageRequest(message=message)):
            events.append(event)
        await client.close()
    return [MessageToDict(event) for event in events]


def assess(url: str, text: str) -> list[dict]:
    return asyncio.run(_send(url, text))


def final_status(events: list[dict]) -> tuple[str, str]:
    """The last status event's state and text."""
    status = events[-1]["statusUpdate"]["status"]
    text = "\n".join(p.get("text", "") for p in status.get("message", {}).get("parts", []))
    return status["state"], text


def _request(participant: str = "http://127.0.0.1:9/", **config: object) -> str:
    return json.dumps({"participants": {"agent": participant}, "config": config})


@pytest.fixture
def fast_settings(synthetic_dir: Path, tmp_path: Path) -> Settings:
    """Settings with the synthetic dataset and a fresh runs directory (no Docker needed)."""
    return Settings(
        data_dir=tmp_path / "data",
        runs_dir=tmp_path / "runs",
        dataset=str(synthetic_dir / "instances.jsonl"),
        mirror_dir=synthetic_dir / "mirrors",
    )


# ---------------------------------------------------------------------- pure helpers
def _result(status: Status, reason: Reason = Reason.NONE) -> InstanceResult:
    return InstanceResult(
        instance_id="demo__calc-1",
        status=status,
        reason=reason,
        tests=Groups(fail_to_pass_passed=["t"], pass_to_pass_passed=["u"]),
    )


def test_progress_text() -> None:
    assert progress_text(3, 10, _result(Status.RESOLVED)) == "3/10 demo__calc-1: resolved"
    text = progress_text(1, 2, _result(Status.ERROR, Reason.PARTICIPANT_TIMEOUT))
    assert text == "1/2 demo__calc-1: error (participant_timeout)"


def test_a_finished_instance_updates_with_its_line_and_summary() -> None:
    parts = finished_parts(3, 10, _result(Status.RESOLVED))
    assert parts[0].text == "3/10 demo__calc-1: resolved"
    (data,) = get_data_parts(parts)
    assert data["type"] == "instance_result" and (data["done"], data["total"]) == (3, 10)
    assert (data["instance_id"], data["status"]) == ("demo__calc-1", "resolved")


@pytest.mark.parametrize("queued", [0, 2])
def test_a_heartbeat_says_what_runs_and_what_queues_for_the_hosts_slots(queued: int) -> None:
    in_flight = {"a__b-1": "grading"} | {f"q__q-{n}": "queued" for n in range(queued)}
    parts = heartbeat_parts(1, 5, {"resolved": 1}, in_flight, 61.24, host_slots=4)
    text = parts[0].text
    assert text.startswith("1/5 done after 1m01s; running: a__b-1 (grading)")
    assert ("2 queued for the host's 4 instance slot(s)" in text) == bool(queued)
    (data,) = get_data_parts(parts)
    assert data["type"] == "heartbeat" and data["queued"] == queued
    assert (data["statuses"], data["elapsed"]) == ({"resolved": 1}, 61.2)


@pytest.mark.parametrize("total", [0, 1, 3])
def test_summary_text_is_prose_not_json(total: int) -> None:
    row = LeaderboardRow(
        total_instances=total, resolved_count=total, resolved_pct=1.0 if total else 0.0
    )
    text = summary_text(row, "gold-participant", "a2a-x", dataset="verified")
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    assert f"resolved {total} of {total} instance(s)" in text
    assert text.startswith("SWE-bench Verified: ")


def test_the_summary_names_the_dataset_that_ran() -> None:
    row = LeaderboardRow(total_instances=1, resolved_count=1, resolved_pct=1.0)
    demo = summary_text(row, "gold", "a2a-x", dataset="/data/demo/instances.jsonl")
    assert demo.startswith("Dataset demo/instances.jsonl: gold resolved 1 of 1")
    assert "SWE-bench Verified" not in demo
    lite = summary_text(row, "gold", "a2a-x", dataset="princeton-nlp/SWE-bench_Lite")
    assert lite.startswith("SWE-bench Lite: ")


# ---------------------------------------------------------------------- the server, fast
def test_card_lists_a2a_1_0_and_0_3(fast_settings: Settings) -> None:
    with green_agent(fast_settings) as url:
        card = httpx.get(url + ".well-known/agent-card.json", verify=tls_context()).json()
    interfaces = {(i["protocolBinding"], i["protocolVersion"]) for i in card["supportedInterfaces"]}
    assert interfaces == {("JSONRPC", "1.0"), ("JSONRPC", "0.3")}
    assert card["capabilities"]["streaming"] is True
    assert card["skills"][0]["id"] == "swe-bench-verified"


def test_malformed_requests_are_rejected_with_the_reason(fast_settings: Settings) -> None:
    with green_agent(fast_settings) as url:
        cases = {
            "please evaluate my agent": "The assessment request is not JSON",
            _request(count=0): "count: Input should be greater than or equal to 1",
            json.dumps(
                {"participants": {"a": "http://x:1/", "b": "http://y:2/"}}
            ): "names 2 participants (a, b)",
            _request(instance_ids=["nope__nope-1"]): "Unknown instance id(s): nope__nope-1",
            _request(pattern="nope__*"): "No instance id matches the pattern 'nope__*'",
            _request(repo="demo/calc", instance_ids=["demo__units-1"]): "picks no instance",
        }
        for text, expected in cases.items():
            events = assess(url, text)
            state, message = final_status(events)
            assert state == "TASK_STATE_REJECTED", (text, message)
            assert expected in message
            assert events[0]["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"
    assert not list((fast_settings.storage.runs_dir).glob("*")), "a rejected request made a run dir"


def test_unknown_keys_are_ignored_and_named_in_the_summary(fast_settings: Settings) -> None:
    """The workflows' keys are accepted; unknown ones are named, never fatal. Shard 4/4 of
    the 3 synthetic instances is empty: completed, a summary, no leaderboard row."""
    request = _request(
        pattern="demo__*", shard_index=3, num_shards=4, num_instances=-1, max_count=2
    )
    with green_agent(fast_settings) as url:
        events = assess(url, request)
    state, _ = final_status(events)
    assert state == "TASK_STATE_COMPLETED"
    (artifact,) = [e["artifactUpdate"]["artifact"] for e in events if "artifactUpdate" in e]
    (part,) = artifact["parts"]
    assert "shard 4/4 of this selection holds no instance" in part["text"]
    assert "Ignored unknown key: 'config.max_count' (did you mean 'count'?)." in part["text"]
    with pytest.raises(json.JSONDecodeError):
        json.loads(part["text"])


def test_no_docker_daemon_fails_the_task_and_the_server_lives_on(
    fast_settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    with green_agent(fast_settings) as url:
        state, message = final_status(assess(url, _request(instance_ids="demo__calc-1")))
        assert state == "TASK_STATE_FAILED"
        assert "No Docker daemon answers" in message
        # the server still answers the next request
        state, _ = final_status(assess(url, "not json"))
        assert state == "TASK_STATE_REJECTED"


def test_unreadable_dataset_fails_the_task(fast_settings: Settings, tmp_path: Path) -> None:
    settings = fast_settings.replace(**{"dataset": str(tmp_path / "missing.jsonl")})
    with green_agent(settings) as url:
        state, message = final_status(assess(url, _request(count=1)))
    assert state == "TASK_STATE_FAILED"
    assert "cannot load its dataset" in message and "missing.jsonl" in message


def test_a2a_0_3_client_gets_the_rejection(fast_settings: Settings) -> None:
    if not A2A03_PYTHON:
        pytest.skip("set SWE_GREEN_A2A03_PYTHON to a Python with a2a-sdk[http-server]==0.3.*")
    with green_agent(fast_settings) as url:
        events = run_03_client(url, _request(shard_index=2, num_shards=2))
    assert events[-1]["kind"] == "status-update" and events[-1]["final"] is True
    assert events[-1]["status"]["state"] == "rejected"
    text = events[-1]["status"]["message"]["parts"][0]["text"]
    assert "shard_index 2 is out of range for num_shards 2" in text


# ---------------------------------------------------------------------- hostile requests
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (_request(count=1).replace('"count": 1', '"test_timeout": Infinity'), "contains Infinity"),
        (_request(count=1).replace('"count": 1', '"tool_timeout": Infinity'), "contains Infinity"),
        (_request(count=1).replace('"count": 1', '"tool_timeout": NaN'), "contains NaN"),
        (_request(test_timeout=1e300), "test_timeout: Input should be less than or equal to"),
        (_request(instance_timeout=1e300), "instance_timeout: Input should be less than or eq"),
        (_request(max_tool_calls=10**15), "max_tool_calls: Input should be less than or equal"),
        ("[" * 100_000 + "]" * 100_000, "nests 100000 levels deep; the limit is 32"),
        (_request(count=1).replace('"count": 1', '"count": ' + "7" * 5000), "Exceeds the limit"),
        ('{"participants": {"agent": "file:///etc/passwd"}}', "no valid http(s) URL"),
        ('{"participants": {"agent": "gopher://x:70/"}}', "no valid http(s) URL"),
    ],
)
def test_hostile_requests_are_rejected_not_crashed(
    fast_settings: Settings, text: str, expected: str
) -> None:
    with green_agent(fast_settings) as url:
        state, message = final_status(assess(url, text))
    assert state == "TASK_STATE_REJECTED", message
    assert expected in message and "internal error" not in message
    assert not list(fast_settings.storage.runs_dir.glob("*"))


def test_participant_hosts_outside_the_allow_list_are_rejected(fast_settings: Settings) -> None:
    settings = fast_settings.replace(**{"serve_allowed_hosts": "127.0.0.1, *.internal"})
    with green_agent(settings) as url:
        state, message = final_status(assess(url, _request("http://10.1.2.3:9019/", count=1)))
        assert state == "TASK_STATE_REJECTED"
        assert "Participant host '10.1.2.3' is not on this green agent's allow-list" in message
        # an allowed host passes the check (and the empty shard completes without Docker)
        request = _request("http://agent.internal:9019/", shard_index=3, num_shards=4)
        state, message = final_status(assess(url, request))
        assert state == "TASK_STATE_COMPLETED", message


def test_host_allowed_globs() -> None:
    assert host_allowed("http://x:1/", [])
    assert host_allowed("http://127.0.0.1:8080/agent", ["127.0.0.1"])
    assert host_allowed("https://A.Example.internal/", ["*.example.internal"])
    assert not host_allowed("http://example.internal.evil.com/", ["*.example.internal"])
    assert split_hosts(" a, b  c,,") == ["a", "b", "c"]


# ------------------------------------------------- what a requester may spend
# the synthetic dataset has 3 instances: shard 4 of 4 is empty, so an accepted request completes
# without Docker
EMPTY_SHARD = {"shard_index": 3, "num_shards": 4}


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"setup_strategy": "llm"}, "setup_strategy 'llm' (this green agent's: 'auto'; it may "
         "call the paid LLM API at the operator's expense)"),
        ({"instance_timeout": 7200}, "instance_timeout 7200 (this green agent's: 3600"),
        ({"test_timeout": 3600.5}, "test_timeout 3600.5 (this green agent's: 1800"),
        ({"max_tool_calls": 251}, "max_tool_calls 251 (this green agent's: 250"),
    ],
)  # fmt: skip
def test_a_request_asking_for_more_than_the_operators_settings_is_rejected(
    fast_settings: Settings, config: dict, named: str
) -> None:
    operator = {"setup_strategy": "auto", "instance_timeout": 3600, "test_timeout": 1800}
    settings = fast_settings.replace(**operator, max_tool_calls=250)
    with green_agent(settings) as url:
        state, message = final_status(assess(url, _request(**config, **EMPTY_SHARD)))
    assert state == "TASK_STATE_REJECTED", message
    assert named in message, message
    assert "serve_allowed_overrides" in message and "--allow-requester" in message
    assert not list(fast_settings.storage.runs_dir.glob("*"))


def test_validation_the_operator_turned_off_is_refused_to_a_requester(
    fast_settings: Settings,
) -> None:
    settings = fast_settings.replace(validate_env=False)
    with green_agent(settings) as url:
        state, message = final_status(assess(url, _request(validate=True, **EMPTY_SHARD)))
    assert state == "TASK_STATE_REJECTED", message
    assert "validate on (this green agent's: off; it adds a gold-patch run" in message


def test_asking_for_less_or_for_what_the_operator_allows_runs(fast_settings: Settings) -> None:
    less = {
        "setup_strategy": "recipe", "instance_timeout": 60, "tool_timeout": 10,
        "test_timeout": 1800, "participant_timeout": 30, "max_tool_calls": 5, "validate": False,
        "concurrency": 64,
    }  # fmt: skip
    more = {"setup_strategy": "llm", "instance_timeout": 7200, "validate": True}
    allowed = fast_settings.replace(
        validate_env=False, serve_allowed_overrides="setup_strategy, instance_timeout validate"
    )
    with green_agent(fast_settings) as url:
        state, message = final_status(assess(url, _request(**less, **EMPTY_SHARD)))
        assert state == "TASK_STATE_COMPLETED", message
    with green_agent(allowed) as url:
        state, message = final_status(assess(url, _request(**more, **EMPTY_SHARD)))
        assert state == "TASK_STATE_COMPLETED", message
        state, message = final_status(assess(url, _request(max_tool_calls=251, **EMPTY_SHARD)))
        assert state == "TASK_STATE_REJECTED" and "max_tool_calls 251" in message


# ---------------------------------------------------------------------- card, token
def test_card_is_served_at_the_legacy_path_too(fast_settings: Settings) -> None:
    with green_agent(fast_settings) as url:
        new = httpx.get(url + ".well-known/agent-card.json", verify=tls_context()).json()
        legacy = httpx.get(url + ".well-known/agent.json", verify=tls_context()).json()
    assert new == legacy
    assert legacy["url"] == url and legacy["name"] == "swe-bench-verified-green"
    assert "securitySchemes" not in legacy  # no token: no scheme declared


def test_bearer_token_guards_every_call_but_the_card(fast_settings: Settings) -> None:
    settings = fast_settings.replace(**{"serve_token": "s3cret"})
    with green_agent(settings) as url:
        card = httpx.get(url + ".well-known/agent-card.json", verify=tls_context()).json()
        assert httpx.get(url + ".well-known/agent.json", verify=tls_context()).status_code == 200
        rpc = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {}}
        unauthorized = httpx.post(url, json=rpc, verify=tls_context())
        wrong = httpx.post(
            url, json=rpc, headers={"Authorization": "Bearer nope"}, verify=tls_context()
        )
        events = asyncio.run(_send(url, "not json", headers={"Authorization": "Bearer s3cret"}))
    assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "bearer"
    assert card["securityRequirements"] == [{"schemes": {"bearer": {}}}]
    assert unauthorized.status_code == wrong.status_code == 401
    assert "Bearer" in unauthorized.headers["www-authenticate"]
    assert "needs 'Authorization: Bearer <token>'" in unauthorized.json()["message"]
    assert final_status(events)[0] == "TASK_STATE_REJECTED"


def test_serve_binds_loopback_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    from orchestrator.frontends.cli import commands_serve
    from orchestrator.frontends.server import green_agent

    calls: list[tuple] = []
    monkeypatch.setattr(green_agent, "serve", lambda *args, **kwargs: calls.append((args, kwargs)))
    commands_serve.serve_command()
    commands_serve.serve_command(
        host="0.0.0.0", port=9009, card_url="http://g:9009/", token="t",
        allow_host=["127.0.0.1", "*.internal"], keep_containers="on_failure", max_kept=3,
        allow_requester=["setup_strategy", "validate"],
    )  # fmt: skip
    (host, port, card_url), kwargs = calls[0]
    assert (host, port, card_url) == ("127.0.0.1", 9009, None)
    assert kwargs["settings"].serve.serve_keep_containers == "never"  # serve's default
    assert kwargs["settings"].serve.serve_token is None
    (host, port, card_url), kwargs = calls[1]
    assert (host, port, card_url) == ("0.0.0.0", 9009, "http://g:9009/")
    settings = kwargs["settings"]
    assert (
        settings.serve.serve_token == "t"
        and settings.serve.serve_allowed_hosts == "127.0.0.1,*.internal"
    )
    assert settings.serve.serve_keep_containers == "on_failure"
    assert settings.serve.serve_max_kept_containers == 3
    assert settings.serve.serve_allowed_overrides == "setup_strategy,validate"


@pytest.mark.parametrize(
    ("host", "settings", "starts"),
    [
        ("0.0.0.0", {}, False),
        ("::", {}, False),
        ("192.0.2.7", {}, False),
        ("0.0.0.0", {"serve_token": "t"}, True),
        ("0.0.0.0", {"serve_allowed_hosts": "127.0.0.1"}, True),
        ("0.0.0.0", {"serve_insecure": True}, True),
        ("127.0.0.1", {}, True),
        ("::1", {}, True),
        ("localhost", {}, True),
    ],
)
def test_serve_refuses_a_public_address_with_nobody_checked(
    monkeypatch: pytest.MonkeyPatch, host: str, settings: dict, starts: bool
) -> None:
    from orchestrator.errors import UserError
    from orchestrator.frontends.server import green_agent as server

    started: list[str] = []
    monkeypatch.setattr(server, "listen", lambda host, port: started.append(host))
    monkeypatch.setattr(server.GreenServer, "run", lambda self, sockets: None)
    monkeypatch.setattr(server, "reap_left_behind", lambda settings: None)
    if starts:
        server.serve(host, 9009, settings=Settings(**settings))
        assert started == [host]
        return
    with pytest.raises(UserError) as caught:
        server.serve(host, 9009, settings=Settings(**settings))
    assert "no token and no allow-list" in str(caught.value)
    assert "--insecure" in str(caught.value) and "\n" not in str(caught.value)
    assert started == []


# ---------------------------------------------------------------------- integers for 0.3
def test_whole_numbers_reach_0_3_clients_as_integers() -> None:
    from a2a.compat.v0_3 import conversions

    from orchestrator.frontends.shared.compat03 import install, integral

    assert install() and install()  # idempotent
    data = {"total_instances": 3, "resolved_pct": 1.0, "f": 0.5, "xs": [{"done": 2}]}
    part = conversions.to_compat_part(new_data_part(data))
    assert part.root.data == {
        "total_instances": 3,
        "resolved_pct": 1.0,
        "f": 0.5,
        "xs": [{"done": 2}],
    }
    loaded = json.loads(json.dumps(part.root.data))  # what a 0.3 client's JSON reads as
    assert type(loaded["total_instances"]) is int and type(loaded["resolved_pct"]) is float
    assert type(loaded["xs"][0]["done"]) is int and loaded["f"] == 0.5
    assert integral(2.0**60) == 2.0**60  # beyond a double's exact integers: left alone


# ---------------------------------------------------------------------- host slots
def test_host_slots_cap_instances_across_assessments() -> None:
    async def main() -> tuple[int, list[bool]]:
        slots = HostSlots(2)
        running = peak = 0
        busy_seen: list[bool] = []

        async def instance() -> None:
            nonlocal running, peak
            async with slots.slot():
                running += 1
                peak = max(peak, running)
                await asyncio.sleep(0.01)
                running -= 1

        async def assessment() -> None:
            busy_seen.append(slots.busy)
            limit = asyncio.Semaphore(2)  # each asks for concurrency 2

            async def one() -> None:
                async with limit:
                    await instance()

            await asyncio.gather(*(one() for _ in range(4)))

        await asyncio.gather(*(assessment() for _ in range(3)))
        assert slots.in_use == slots.waiting == 0
        return peak, busy_seen

    peak, busy_seen = asyncio.run(main())
    assert peak == 2
    assert busy_seen == [False, False, False]  # all three arrive before any instance starts


def test_infrastructure_failure_needs_every_instance_to_fail_before_the_participant() -> None:
    def error(iid: str, reason: Reason, tool_calls: int = 0) -> InstanceResult:
        return InstanceResult(
            instance_id=iid, status=Status.ERROR, reason=reason, message=f"{iid} broke",
            tool_calls=tool_calls,
        )  # fmt: skip

    broken = [error("a", Reason.INFRASTRUCTURE), error("b", Reason.ENVIRONMENT)]
    message = infrastructure_failure(broken, set())
    assert message and "all 2 instance(s) failed before the participant was called" in message
    assert "a broke; b broke" in message and "swe-green images build" in message
    assert infrastructure_failure(broken, {"b"}) is None  # b reached its participant
    assert infrastructure_failure([*broken, _result(Status.RESOLVED)], set()) is None
    assert infrastructure_failure([error("a", Reason.PARTICIPANT_TIMEOUT)], set()) is None
    assert infrastructure_failure([error("a", Reason.INFRASTRUCTURE, tool_calls=3)], set()) is None
    assert infrastructure_failure([], set()) is None


@pytest.mark.container
def test_no_base_image_fails_the_task_with_the_fix(fast_settings: Settings) -> None:
    settings = fast_settings.replace(**{"image_prefix": "swe-green-nothing-here"})
    with green_agent(settings) as url:
        state, message = final_status(assess(url, _request(instance_ids="demo__calc-1")))
    assert state == "TASK_STATE_FAILED"
    assert "no base image swe-green-nothing-here/base:*" in message
    assert "swe-green images build" in message


@pytest.mark.container
def test_every_instance_failing_before_the_participant_fails_the_task(
    fast_settings: Settings, env_settings: Settings
) -> None:
    """No recipes and no API key: every environment fails before any participant call (the
    participant answers: its card is read before the run starts)."""
    from orchestrator.frontends.reference_participants import make_participant, running

    settings = fast_settings.replace(
        **{"image_prefix": env_settings.environment.image_prefix, "setup_strategy": "recipe"}
    )
    empty = make_participant("empty", dataset=settings.dataset.dataset)
    with running(empty) as empty_url, green_agent(settings) as url:
        state, message = final_status(assess(url, _request(empty_url, pattern="demo__*")))
    assert state == "TASK_STATE_FAILED"
    assert "could not evaluate: all 3 instance(s) failed before the participant" in message
    assert "Fix the green agent's host" in message
    (run_dir,) = settings.storage.runs_dir.iterdir()
    assert not (run_dir / "results.json").exists()


def run_03_client(url: str, request: str, timeout: float = 60) -> list[dict]:
    """Run the a2a-sdk 0.3 client script; its events, one dict per JSON line."""
    assert A2A03_PYTHON
    done = subprocess.run(
        [A2A03_PYTHON, str(FIXTURES / "a2a03_client.py"), url, request],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    return events


# ---------------------------------------------------------------------- the acceptance test
@pytest.mark.container
@pytest.mark.timeout(2400)
def test_platform_assessment_over_a2a_0_3(env_settings: Settings, tmp_path: Path) -> None:
    """The AgentBeats path: a 0.3 client sends the request, the green agent evaluates the
    synthetic instances in containers against the gold participant, streams progress, and
    answers with an artifact the leaderboard query reads."""
    if not A2A03_PYTHON:
        pytest.skip("set SWE_GREEN_A2A03_PYTHON to a Python with a2a-sdk[http-server]==0.3.*")
    from orchestrator.frontends.reference_participants import make_participant, running

    settings = env_settings.replace(**{"runs_dir": tmp_path / "runs", "keep_containers": "never"})
    gold = make_participant("gold", dataset=settings.dataset.dataset)
    with running(gold) as gold_url, green_agent(settings, heartbeat=5.0) as url:
        request = _request(gold_url, instance_ids=",".join(SYNTHETIC_IDS), concurrency=3)
        events = run_03_client(url, request, timeout=2300)

    raw = json.dumps(events)
    assert "input-required" not in raw and "input_required" not in raw
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "task" and kinds.count("artifact-update") == 1
    statuses = [e for e in events if e["kind"] == "status-update"]
    assert {e["status"]["state"] for e in statuses[:-1]} == {"working"}
    assert statuses[-1]["status"]["state"] == "completed" and statuses[-1]["final"] is True

    # one working update per finished instance: text and a data part with its result
    finished = []
    for update in statuses[:-1]:
        parts = update["status"]["message"]["parts"]
        data = [p["data"] for p in parts if p["kind"] == "data"]
        if data and data[0]["type"] == "instance_result":
            finished.append((parts[0]["text"], data[0]))
    assert sorted(d["instance_id"] for _, d in finished) == sorted(SYNTHETIC_IDS)
    n = len(SYNTHETIC_IDS)
    assert [d["done"] for _, d in finished] == list(range(1, n + 1))
    assert all(type(d["done"]) is int and type(d["total"]) is int for _, d in finished)
    for text, data in finished:
        assert text == f"{data['done']}/{n} {data['instance_id']}: resolved"
        assert data["status"] == "resolved" and data["fail_to_pass_passed"] >= 1

    # the artifact: a summary that is not JSON, and the leaderboard row with the instances
    artifact = next(e for e in events if e["kind"] == "artifact-update")["artifact"]
    texts = [p["text"] for p in artifact["parts"] if p["kind"] == "text"]
    datas = [p["data"] for p in artifact["parts"] if p["kind"] == "data"]
    assert len(texts) == 1 and len(datas) == 1
    with pytest.raises(json.JSONDecodeError):
        json.loads(texts[0])
    assert f"resolved {n} of {n}" in texts[0]
    row = datas[0]
    assert set(LeaderboardRow.model_fields) <= set(row)
    assert row["total_instances"] == n and type(row["total_instances"]) is int
    assert row["resolved_pct"] == 1.0 and row["error_pct"] == 0.0
    assert row["fail_to_pass_passed_pct"] == 1.0 and row["pass_to_pass_passed_pct"] == 1.0
    assert sorted(i["instance_id"] for i in row["instances"]) == sorted(SYNTHETIC_IDS)
    assert {i["status"] for i in row["instances"]} == {"resolved"}

    # the run directory got its own results.json
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert run_dir.name == row["run_id"] and run_dir.name.startswith("a2a-")
    ours = json.loads((run_dir / "results.json").read_text())
    assert ours["participants"] == {"agent": "gold-participant"}
    assert ours["results"][0]["resolved_pct"] == 1.0

    # the AgentBeats runner writes the results file from the data part; the query reads it
    results_dir = tmp_path / "results"
    results_dir.mkdir()
    (results_dir / "assessment.json").write_text(
        json.dumps({"participants": {"agent": "purple-agent-id"}, "results": [row]})
    )
    ((agent, *numbers),) = leaderboard_rows(results_dir)
    assert agent == "purple-agent-id"
    assert numbers == [100.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 100.0, 100.0, n]


@pytest.mark.container
@pytest.mark.timeout(1200)
def test_two_assessments_at_once_get_their_own_runs(env_settings: Settings, tmp_path: Path) -> None:
    if not A2A03_PYTHON:
        pytest.skip("set SWE_GREEN_A2A03_PYTHON to a Python with a2a-sdk[http-server]==0.3.*")
    from orchestrator.frontends.reference_participants import make_participant, running

    settings = env_settings.replace(**{"runs_dir": tmp_path / "runs", "keep_containers": "never"})
    gold = make_participant("gold", dataset=settings.dataset.dataset)
    with running(gold) as gold_url, green_agent(settings) as url:
        request = _request(gold_url, instance_ids=["demo__units-1"])
        clients = [
            subprocess.Popen(
                [A2A03_PYTHON, str(FIXTURES / "a2a03_client.py"), url, request],
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        outputs = [client.communicate(timeout=1100)[0] for client in clients]
    run_ids = set()
    for output in outputs:
        events = [json.loads(line) for line in output.splitlines()]
        assert events[-1]["status"]["state"] == "completed", events[-1]
        artifact = next(e for e in events if e["kind"] == "artifact-update")["artifact"]
        row = next(p["data"] for p in artifact["parts"] if p["kind"] == "data")
        assert row["resolved_pct"] == 1.0 and row["total_instances"] == 1
        run_ids.add(row["run_id"])
    assert len(run_ids) == 2
    assert {p.name for p in (tmp_path / "runs").iterdir()} == run_ids
    for run_id in run_ids:
        assert (tmp_path / "runs" / run_id / "results.json").is_file()


async def _cancel_when(url: str, text: str, ready: Callable[[], bool]) -> tuple[str, int, int]:
    """Send ``text``, leave the stream at the first ``working`` update, wait for ``ready()``,
    cancel the task; returns the run id, the state the cancel call reports and the state a
    later read of the task reports."""
    async with httpx.AsyncClient(
        timeout=httpx.Timeout(30.0, read=None), verify=tls_context()
    ) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        client = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
        message = Message(
            role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[new_text_part(text)]
        )
        stream = client.send_message(SendMessageRequest(message=message))
        task_id = run_id = ""
        async for event in stream:
            if event.HasField("status_update") and (
                event.status_update.status.state == TaskState.TASK_STATE_WORKING
            ):
                task_id = event.status_update.task_id
                run_id = MessageToDict(event.status_update.status.message.parts[1].data)["run_id"]
                break
        await stream.aclose()
        assert task_id, "no working update"
        while not ready():
            await asyncio.sleep(0.2)
        canceled = await client.cancel_task(CancelTaskRequest(id=task_id))
        later = await client.get_task(GetTaskRequest(id=task_id))
        await client.close()
    return run_id, canceled.status.state, later.status.state


@pytest.mark.container
@pytest.mark.timeout(1200)
def test_a_canceled_assessment_ends_canceled_and_leaves_no_container(
    env_settings: Settings, docker_backend, tmp_path: Path
) -> None:
    """Canceled while the participant works (it would answer in 10 minutes): the task ends
    ``canceled``, the participant's container is gone, the server serves on."""
    from orchestrator.frontends.reference_participants import running
    from orchestrator.frontends.reference_participants.scripted import (
        FinalAnswer,
        Script,
        ScriptedParticipant,
    )
    from orchestrator.housekeeping.inventory import list_containers

    settings = env_settings.replace(**{"runs_dir": tmp_path / "runs", "keep_containers": "never"})
    slow = ScriptedParticipant(Script(final=FinalAnswer(text="done", delay=600)))
    with running(slow) as slow_url, green_agent(settings) as url:
        request = _request(slow_url, instance_ids=["demo__units-1"])
        run_id, *states = asyncio.run(_cancel_when(url, request, lambda: bool(slow.states)))
        assert states == [TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_CANCELED]
        assert list_containers(docker_backend, run_id=run_id) == []
        state, _ = final_status(assess(url, "not json"))
        assert state == "TASK_STATE_REJECTED"
    assert [p.name for p in (tmp_path / "runs").iterdir()] == [run_id]
    assert not (tmp_path / "runs" / run_id / "results.json").exists()


# ---------------------------------------------------------------------- the gateway's path
def path_prefix_proxy(routes: dict[str, str]) -> Starlette:
    """A small stand-in for the AgentBeats gateway's proxy: ``/<role>/<path>`` goes to the
    participant; agent cards get loopback URLs rewritten to come back through the proxy."""
    from starlette.requests import Request
    from starlette.responses import Response, StreamingResponse
    from starlette.routing import Route

    client = httpx.AsyncClient(timeout=httpx.Timeout(300.0), verify=tls_context())
    hops = {"content-length", "content-encoding", "transfer-encoding", "connection"}

    async def handle(request: Request) -> Response:
        name = request.path_params["name"]
        path = request.path_params.get("path", "")
        if name not in routes:
            return Response(f"Unknown route: {name}", status_code=404)
        upstream = routes[name].rstrip("/")
        target = f"{upstream}/{path}" if path else upstream
        headers = {k: v for k, v in request.headers.items() if k.lower() not in {"host", *hops}}
        outgoing = client.build_request(
            request.method, target, headers=headers, content=await request.body()
        )
        if path == ".well-known/agent-card.json":
            response = await client.send(outgoing)
            card = response.json()
            base = str(request.base_url).rstrip("/")
            for item in [card, *card.get("supportedInterfaces", [])]:
                parsed = urlparse(item.get("url", ""))
                if parsed.hostname in {"localhost", "127.0.0.1", "0.0.0.0", "::1"}:
                    item["url"] = f"{base}/{name}{parsed.path or '/'}"
            return Response(json.dumps(card), response.status_code, media_type="application/json")
        response = await client.send(outgoing, stream=True)

        async def body():  # noqa: ANN202
            async for chunk in response.aiter_bytes():
                yield chunk
            await response.aclose()

        kept = {k: v for k, v in response.headers.items() if k.lower() not in hops}
        return StreamingResponse(body(), status_code=response.status_code, headers=kept)

    methods = ["GET", "POST"]
    return Starlette(
        routes=[
            Route("/{name}/{path:path}", handle, methods=methods),
            Route("/{name}", handle, methods=methods),
        ]
    )


@pytest.mark.container
@pytest.mark.timeout(2400)
def test_the_gateway_path_workflow_config_through_a_path_prefixed_proxy(
    env_settings: Settings, tmp_path: Path
) -> None:
    """As on the platform: a 0.3 client sends the leaderboard workflow's config (shard_index,
    num_shards, num_instances, plus an unknown key) to the green agent; the participant's URL
    is a path prefix on a proxy (http://<proxy>/participant_1) that forwards to the gold
    participant. The gateway's results file, the runner's submission file, and our leaderboard
    query then show the participant's id with whole-number counts."""
    if not A2A03_PYTHON:
        pytest.skip("set SWE_GREEN_A2A03_PYTHON to a Python with a2a-sdk[http-server]==0.3.*")
    from orchestrator.frontends.reference_participants import make_participant, running
    from tests.test_leaderboard import GREEN_ID, PURPLE_ID, run_query

    settings = env_settings.replace(
        **{"runs_dir": tmp_path / "runs", "serve_allowed_hosts": "127.0.0.1"}
    )
    gold = make_participant("gold", dataset=settings.dataset.dataset)
    config = {
        "pattern": "demo__*",
        "concurrency": 2,
        "shard_index": 0,
        "num_shards": 2,
        "num_instances": 3,
        "leaderboard_note": "ignored",
    }
    with (
        running(gold) as gold_url,
        serve_asgi_in_thread(lambda _: path_prefix_proxy({"participant_1": gold_url}), "proxy")
        as proxy_url,
        green_agent(settings, heartbeat=5.0) as url,
    ):  # fmt: skip
        participants = {"participant_1": proxy_url + "participant_1"}
        done = subprocess.run(
            [A2A03_PYTHON, str(FIXTURES / "gateway_client.py"), url,
             json.dumps(participants), json.dumps(config)],
            capture_output=True, text=True, timeout=2300, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    served = json.loads(done.stdout.splitlines()[-1])
    assert served["status"] == "completed", served
    (row,) = served["results"]  # the summary text is not JSON: only the data part
    assert row["shard"] == "1/2" and row["total_instances"] == 2
    assert type(row["total_instances"]) is int and type(row["resolved_count"]) is int
    assert row["resolved_pct"] == 1.0 and row["participant_role"] == "participant_1"
    assert sorted(i["instance_id"] for i in row["instances"]) == ["demo__calc-1", "demo__textkit-1"]
    artifact = next(e for e in served["events"] if e["kind"] == "artifact-update")["artifact"]
    text = next(p["text"] for p in artifact["parts"] if p["kind"] == "text")
    assert "Ignored unknown key: 'config.leaderboard_note'." in text
    # the participant was reached through the proxy: its card, as read, points back into it
    (run_dir,) = (tmp_path / "runs").iterdir()
    config_file = json.loads((run_dir / "config.json").read_text())
    assert config_file["request"]["participants"] == participants
    transcript = (run_dir / "instances" / "demo__calc-1" / "transcript.jsonl").read_text()
    assert f'"url": "{proxy_url}participant_1/"' in transcript

    # the runner's submission file (gateway output + agentbeats ids, green agent first)
    results_dir = tmp_path / "results"
    results_dir.mkdir()
    submission = {
        "status": served["status"],
        "participants": {"swe_green": GREEN_ID, "participant_1": PURPLE_ID},
        "results": served["results"],
    }
    (results_dir / "submission.json").write_text(json.dumps(submission))
    ((agent, resolved, *_, total, shards),) = run_query(results_dir)
    assert (agent, resolved, total, shards) == (PURPLE_ID, 100.0, 2, 1)
    ((seed_id, *_),) = leaderboard_rows(results_dir)  # the seed's query: still reads it
    assert seed_id == GREEN_ID


@pytest.mark.container
def test_kept_containers_of_assessments_are_capped_oldest_first(
    fast_settings: Settings, docker_client: docker.DockerClient, base_image: str, docker_backend
) -> None:
    from orchestrator.frontends.server.assessment_executor import AssessmentExecutor, prune_kept
    from orchestrator.housekeeping.inventory import list_containers
    from orchestrator.sandbox.models import LABEL_INSTANCE, LABEL_ROLE, LABEL_RUN, LABEL_TOOL

    run_id = f"a2a-test-{uuid.uuid4().hex[:8]}"
    made = []
    try:
        for n in range(3):
            labels = {LABEL_TOOL: "1", LABEL_RUN: run_id, LABEL_INSTANCE: f"x__y-{n}",
                      LABEL_ROLE: "participant"}  # fmt: skip
            container = docker_client.containers.run(base_image, "true", labels=labels, detach=True)
            container.wait(timeout=30)
            made.append(container.name)
            time.sleep(1.1)  # distinct creation times
        settings = fast_settings.replace(**{"serve_max_kept_containers": 1})
        executor = AssessmentExecutor(settings)
        prune_kept(docker_backend, settings.serve.serve_max_kept_containers, executor.log)
        left = [info.name for info in list_containers(docker_backend, run_id=run_id)]
        assert left == [made[-1]]  # the newest stays
    finally:
        for info in list_containers(docker_backend, run_id=run_id):
            docker_client.containers.get(info.id).remove(force=True)


@pytest.mark.container
@pytest.mark.timeout(1200)
def test_the_host_cap_holds_across_concurrent_assessments(
    env_settings: Settings, docker_backend, tmp_path: Path
) -> None:
    """Three assessments at once on a host whose cap is 1: never two instances' containers
    at a time; the later ones say they are queued."""
    if not A2A03_PYTHON:
        pytest.skip("set SWE_GREEN_A2A03_PYTHON to a Python with a2a-sdk[http-server]==0.3.*")
    import threading

    from orchestrator.frontends.reference_participants import make_participant, running
    from orchestrator.housekeeping.inventory import list_containers

    settings = env_settings.replace(
        **{"runs_dir": tmp_path / "runs", "concurrency": 1, "validate_env": False}
    )
    gold = make_participant("gold", dataset=settings.dataset.dataset)
    peak = 0
    stop = threading.Event()

    def watch() -> None:
        nonlocal peak
        while not stop.is_set():
            running_now = {
                info.instance_id
                for info in list_containers(docker_backend)
                if info.status == "running" and info.run_id.startswith("a2a-")
                and (tmp_path / "runs" / info.run_id).exists()
            }  # fmt: skip
            peak = max(peak, len(running_now))
            time.sleep(0.1)

    watcher = threading.Thread(target=watch, daemon=True)
    with running(gold) as gold_url, green_agent(settings, heartbeat=2.0) as url:
        watcher.start()
        clients = [
            subprocess.Popen(
                [
                    A2A03_PYTHON,
                    str(FIXTURES / "a2a03_client.py"),
                    url,
                    _request(gold_url, instance_ids=[iid], concurrency=2),
                ],
                stdout=subprocess.PIPE,
                text=True,
            )  # fmt: skip
            for iid in SYNTHETIC_IDS
        ]
        outputs = [client.communicate(timeout=1100)[0] for client in clients]
        stop.set()
        watcher.join()
    queued = 0
    for output in outputs:
        events = [json.loads(line) for line in output.splitlines()]
        assert events[-1]["status"]["state"] == "completed", events[-1]
        started = next(e for e in events if e["kind"] == "status-update")
        queued += "Queued: all 1 of the host's instance slots are busy" in json.dumps(started)
    assert peak == 1
    assert queued >= 1
