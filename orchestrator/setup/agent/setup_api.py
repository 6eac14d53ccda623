"""The setup agent's Messages API calls: one call, retried on transient errors by tenacity
(the SDK's own retries are off) while the agent's deadline allows; a refused key stops at once.
"""

from __future__ import annotations

import time
from typing import Any

import anthropic
from pydantic import BaseModel
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
    wait_random,
)

from orchestrator.setup.agent.setup_log import SetupLog
from orchestrator.setup.agent.setup_models import (
    API_TIMEOUT,
    AUTH_ERRORS,
    RESPONSE_MAX_TOKENS,
    SYSTEM_PROMPT,
    TRANSIENT_ERRORS,
    FailureKind,
    RetryPolicy,
)


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


def _retry_after(exc: BaseException | None) -> float:
    """The server's ``retry-after`` hint in seconds, or 0."""
    response = getattr(exc, "response", None)
    if response is None:
        return 0.0
    try:
        return max(0.0, float(response.headers.get("retry-after", 0)))
    except (TypeError, ValueError):
        return 0.0


def describe(exc: BaseException) -> str:
    if isinstance(exc, anthropic.APIStatusError):
        body = exc.body if isinstance(exc.body, dict) else {}
        raw_error = body.get("error")
        error = raw_error if isinstance(raw_error, dict) else {}
        detail = error.get("message") or str(exc)
        return f"HTTP {exc.status_code} {error.get('type', type(exc).__name__)}: {detail}"
    return f"{type(exc).__name__}: {exc}"


def create_message(
    client: anthropic.Anthropic, request: MessagesRequest, retry: RetryPolicy, log: SetupLog
) -> Any:
    """One Messages API call, retried on transient errors while the deadline allows."""
    policy = _RetryPolicy(request, retry, log)

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


class _RetryPolicy:
    """tenacity's retry of one request: exponential backoff with jitter (or the server's
    ``retry-after``), a number of attempts, no sleep past the deadline, each retry logged."""

    def __init__(self, request: MessagesRequest, retry: RetryPolicy, log: SetupLog) -> None:
        self.request, self.retry, self.log = request, retry, log
        self.backoff = wait_exponential(
            multiplier=retry.initial_wait, max=retry.max_wait
        ) + wait_random(0, retry.initial_wait)
        self.out_of_time = False

    def retrying(self) -> Retrying:
        return Retrying(
            retry=retry_if_exception_type(TRANSIENT_ERRORS),
            wait=self.wait,
            # tenacity combines any stop callable; its `__or__` is annotated for stop_base only
            stop=stop_after_attempt(self.retry.attempts) | self.past_deadline,  # type: ignore[operator]
            before_sleep=self.log_retry,
            reraise=True,
        )

    def wait(self, state: RetryCallState) -> float:
        hinted = _retry_after(state.outcome.exception() if state.outcome else None)
        return min(max(self.backoff(state), hinted), self.retry.max_wait)

    def past_deadline(self, state: RetryCallState) -> bool:
        sleep = getattr(state, "upcoming_sleep", 0.0) or 0.0
        self.out_of_time = time.monotonic() + sleep >= self.request.deadline
        return self.out_of_time

    def log_retry(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        self.log.write(
            "api_retry",
            turn=self.request.turn,
            attempt=state.attempt_number,
            wait=round(getattr(state, "upcoming_sleep", 0.0) or 0.0, 3),
            error=describe(exc) if exc else "",
        )


def _timeout_reason(request: MessagesRequest, detail: str) -> str:
    return f"ran out of wall time ({request.wall_time:.0f} s): {detail}"
