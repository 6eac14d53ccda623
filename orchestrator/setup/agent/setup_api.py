"""The setup agent's Messages API calls: one call, retried under the one Anthropic retry
policy (:mod:`orchestrator.anthropic_retry`) while the agent's deadline allows; a refused key
stops at once.
"""

from __future__ import annotations

import time
from typing import Any

import anthropic
from pydantic import BaseModel
from tenacity import RetryCallState

from orchestrator.anthropic_retry import (
    API_TIMEOUT,
    AUTH_ERRORS,
    TRANSIENT_ERRORS,
    ApiRetry,
    RetryPolicy,
    describe,
)
from orchestrator.setup.agent.setup_log import SetupLog
from orchestrator.setup.agent.setup_models import RESPONSE_MAX_TOKENS, SYSTEM_PROMPT, FailureKind


class MessagesRequest(BaseModel):
    """One turn's request, and the time it must be answered by."""

    model: str
    tools: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    deadline: float  # time.monotonic()
    wall_time: float  # the agent's whole budget, for messages
    turn: int


class SetupStop(Exception):
    """Ends the setup agent's work with a failure kind and a reason."""

    def __init__(self, kind: FailureKind, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


def create_message(
    client: anthropic.Anthropic, request: MessagesRequest, retry: RetryPolicy, log: SetupLog
) -> Any:
    """One Messages API call, retried on transient errors while the deadline allows."""

    def log_retry(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        log.write(
            "api_retry",
            turn=request.turn,
            attempt=state.attempt_number,
            wait=round(getattr(state, "upcoming_sleep", 0.0) or 0.0, 3),
            error=describe(exc) if exc else "",
        )

    policy = ApiRetry(retry, deadline=request.deadline, on_retry=log_retry)

    def attempt() -> Any:
        remaining = request.deadline - time.monotonic()
        if remaining <= 0:
            raise SetupStop("timeout", _timeout_reason(request, "waiting for the API"))
        return client.messages.create(
            model=request.model,
            max_tokens=RESPONSE_MAX_TOKENS,
            system=SYSTEM_PROMPT,
            tools=request.tools,  # type: ignore[arg-type]
            messages=request.messages,  # type: ignore[arg-type]
            timeout=min(API_TIMEOUT, remaining),
        )

    retrying = policy.retrying()
    try:
        return retrying(attempt)
    except AUTH_ERRORS as exc:
        log.write("api_error", turn=request.turn, error=describe(exc), retried=False)
        raise SetupStop(
            "auth",
            f"the Anthropic API refused the API key ({describe(exc)}); check "
            "SWE_GREEN_ANTHROPIC_API_KEY / ANTHROPIC_API_KEY",
        ) from exc
    except TRANSIENT_ERRORS as exc:
        log.write("api_error", turn=request.turn, error=describe(exc), retried=True)
        if policy.out_of_time:
            raise SetupStop("timeout", _timeout_reason(request, describe(exc))) from exc
        raise SetupStop(
            "api_error",
            f"the Anthropic API kept failing ({describe(exc)}), "
            f"gave up after {retrying.statistics.get('attempt_number', '?')} attempts",
        ) from exc
    except anthropic.APIError as exc:
        log.write("api_error", turn=request.turn, error=describe(exc), retried=False)
        raise SetupStop(
            "api_error", f"the Anthropic API rejected a request: {describe(exc)}"
        ) from exc


def _timeout_reason(request: MessagesRequest, detail: str) -> str:
    return f"ran out of wall time ({request.wall_time:.0f} s): {detail}"
