"""The one retry policy for the Anthropic Messages API, against the local fake Messages API:
the setup agent and the claude participant retry alike under it."""

from __future__ import annotations

import asyncio
import time

import anthropic
import pytest

from orchestrator import anthropic_retry
from orchestrator.anthropic_retry import ApiRetry, RetryPolicy
from orchestrator.frontends.reference_participants.base import Incoming
from orchestrator.frontends.reference_participants.claude import ClaudeParticipant
from orchestrator.setup.agent.setup_api import MessagesRequest, SetupStop, create_message
from orchestrator.setup.agent.setup_log import SetupLog

from .fake_anthropic import OVERLOADED, UNAUTHORIZED, Failure, FakeAnthropic, Reply, text

FAST = RetryPolicy(attempts=3, initial_wait=0.01, max_wait=0.05)
SPEC = {"workdir": "/testbed", "tools": []}


def _claude_turn(fake: FakeAnthropic, policy: RetryPolicy) -> object:
    """The claude participant's first turn against ``fake``: its reply, or what it raised."""
    participant = ClaudeParticipant(api_key="test", base_url=fake.url, retry=policy)
    incoming = Incoming(parts=[("text", "Greet the world.")], spec=SPEC)
    try:
        return asyncio.run(participant.respond(participant.new_state(), incoming))
    except anthropic.APIError as exc:
        return exc


def _setup_turn(fake: FakeAnthropic, policy: RetryPolicy, tmp_path) -> object:
    """The setup agent's first API call against ``fake``: the message, or its SetupStop."""
    request = MessagesRequest(
        model="fake", tools=[], messages=[{"role": "user", "content": "set up"}],
        deadline=time.monotonic() + 60, wall_time=60, turn=1,
    )  # fmt: skip
    client = anthropic_retry.client("test", fake.url)
    try:
        return create_message(client, request, policy, SetupLog(tmp_path / "logs"))
    except SetupStop as stop:
        return stop


def test_the_claude_participant_retries_overload_and_rate_limits_then_goes_on():
    rate_limited = Failure(429, "rate_limit_error", "slow down", {"retry-after": "0"})
    with FakeAnthropic([OVERLOADED, rate_limited, Reply([text("Nothing to change.")])]) as fake:
        reply = _claude_turn(fake, FAST)
    assert getattr(reply, "final", False), reply
    assert len(fake.requests) == 3
    assert fake.requests[0] == fake.requests[1] == fake.requests[2]  # the same request again


def test_both_callers_give_up_after_the_policys_attempts(tmp_path):
    with FakeAnthropic([OVERLOADED], repeat_last=True) as fake:
        failed = _claude_turn(fake, FAST)
        claude_requests = len(fake.requests)
        stop = _setup_turn(fake, FAST, tmp_path)
    assert isinstance(failed, anthropic.InternalServerError) and failed.status_code == 529
    assert claude_requests == FAST.attempts
    assert isinstance(stop, SetupStop) and stop.kind == "api_error"
    assert f"gave up after {FAST.attempts} attempts" in stop.reason
    assert len(fake.requests) - claude_requests == FAST.attempts


@pytest.mark.parametrize("caller", ["claude", "setup"])
def test_a_refused_key_is_not_retried(caller, tmp_path):
    with FakeAnthropic([UNAUTHORIZED], repeat_last=True) as fake:
        if caller == "claude":
            assert isinstance(_claude_turn(fake, FAST), anthropic.AuthenticationError)
        else:
            stop = _setup_turn(fake, FAST, tmp_path)
            assert isinstance(stop, SetupStop) and stop.kind == "auth"
    assert len(fake.requests) == 1


def test_the_servers_retry_after_is_waited_for():
    policy = RetryPolicy(attempts=2, initial_wait=0.01, max_wait=5)
    busy = Failure(429, "rate_limit_error", "slow down", {"retry-after": "0.5"})
    with FakeAnthropic([busy, Reply([text("ok")])]) as fake:
        client = anthropic_retry.client("test", fake.url)
        started = time.monotonic()
        message = ApiRetry(policy).retrying()(
            client.messages.create, model="fake", max_tokens=10,
            messages=[{"role": "user", "content": "hi"}],
        )  # fmt: skip
        waited = time.monotonic() - started
    assert message.content[0].text == "ok" and len(fake.requests) == 2
    assert waited >= 0.5


def test_no_sleep_ends_past_the_deadline():
    policy = RetryPolicy(attempts=5, initial_wait=0.01, max_wait=30)
    busy = Failure(429, "rate_limit_error", "slow down", {"retry-after": "20"})
    with FakeAnthropic([busy], repeat_last=True) as fake:
        client = anthropic_retry.client("test", fake.url)
        retry = ApiRetry(policy, deadline=time.monotonic() + 1.0)
        started = time.monotonic()
        with pytest.raises(anthropic.RateLimitError):
            retry.retrying()(
                client.messages.create, model="fake", max_tokens=10,
                messages=[{"role": "user", "content": "hi"}],
            )  # fmt: skip
    assert retry.out_of_time and len(fake.requests) == 1
    assert time.monotonic() - started < 5
