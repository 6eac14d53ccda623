"""The one retry policy for the Anthropic Messages API, for every caller (the LLM setup agent,
the claude reference participant).

A transient error (rate limit, overload, a 5xx, a timeout, a dropped connection) is retried by
tenacity with exponential backoff and jitter, or after the server's ``retry-after`` when that is
longer, up to :attr:`RetryPolicy.attempts` attempts and never into a sleep that ends past the
caller's deadline. A refused key and a rejected request are not retried. The SDK's own retries
are off in the clients made here, so that nothing retries twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anthropic
from pydantic import BaseModel
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
    wait_random,
)

API_TIMEOUT = 600.0

# errors worth another attempt: rate limits, overload (529), 5xx, timeouts, dropped connections
TRANSIENT_ERRORS: tuple[type[Exception], ...] = (
    anthropic.RateLimitError,
    anthropic.APIConnectionError,
    anthropic.InternalServerError,
    anthropic.RequestTimeoutError,
    anthropic.ConflictError,
)
AUTH_ERRORS: tuple[type[Exception], ...] = (
    anthropic.AuthenticationError,
    anthropic.PermissionDeniedError,
)


class RetryPolicy(BaseModel):
    """Backoff for transient API errors: exponential from ``initial_wait`` up to ``max_wait``
    seconds (plus up to ``initial_wait`` of jitter), ``attempts`` in all."""

    attempts: int = 8
    initial_wait: float = 2.0
    max_wait: float = 60.0


def client(api_key: str | None, base_url: str | None = None) -> anthropic.Anthropic:
    """A client whose calls are retried by :class:`ApiRetry` alone (the SDK's retries off)."""
    return anthropic.Anthropic(
        api_key=api_key, base_url=base_url, max_retries=0, timeout=API_TIMEOUT
    )


def async_client(api_key: str | None, base_url: str | None = None) -> anthropic.AsyncAnthropic:
    """The asynchronous :func:`client`."""
    return anthropic.AsyncAnthropic(
        api_key=api_key, base_url=base_url, max_retries=0, timeout=API_TIMEOUT
    )


def describe(exc: BaseException) -> str:
    """An API error in one line: the HTTP status, the API's error type and its message."""
    if isinstance(exc, anthropic.APIStatusError):
        body = exc.body if isinstance(exc.body, dict) else {}
        raw_error = body.get("error")
        error = raw_error if isinstance(raw_error, dict) else {}
        detail = error.get("message") or str(exc)
        return f"HTTP {exc.status_code} {error.get('type', type(exc).__name__)}: {detail}"
    return f"{type(exc).__name__}: {exc}"


def retry_after(exc: BaseException | None) -> float:
    """The server's ``retry-after`` hint in seconds, or 0."""
    response = getattr(exc, "response", None)
    if response is None:
        return 0.0
    try:
        return max(0.0, float(response.headers.get("retry-after", 0)))
    except (TypeError, ValueError):
        return 0.0


class ApiRetry:
    """The retry of one Messages API call under ``policy``: ``retrying()(call, ...)`` or
    ``await async_retrying()(call, ...)``. ``deadline`` (``time.monotonic()``) is the time no
    sleep may end past; ``on_retry`` sees each retry before its sleep. After the call gave
    up, :attr:`out_of_time` says whether the deadline ended it."""

    def __init__(
        self,
        policy: RetryPolicy,
        *,
        deadline: float | None = None,
        on_retry: Callable[[RetryCallState], None] | None = None,
    ) -> None:
        self.policy, self.deadline, self.on_retry = policy, deadline, on_retry
        self.backoff = wait_exponential(
            multiplier=policy.initial_wait, max=policy.max_wait
        ) + wait_random(0, policy.initial_wait)
        self.out_of_time = False

    def retrying(self) -> Retrying:
        return Retrying(**self._options())

    def async_retrying(self) -> AsyncRetrying:
        return AsyncRetrying(**self._options())

    def _options(self) -> dict[str, Any]:
        return {
            "retry": retry_if_exception_type(TRANSIENT_ERRORS),
            "wait": self.wait,
            # tenacity combines any stop callable; its `__or__` is annotated for stop_base only
            "stop": stop_after_attempt(self.policy.attempts) | self.past_deadline,  # type: ignore[operator]
            "before_sleep": self._before_sleep,
            "reraise": True,
        }

    def wait(self, state: RetryCallState) -> float:
        hinted = retry_after(state.outcome.exception() if state.outcome else None)
        return min(max(self.backoff(state), hinted), self.policy.max_wait)

    def past_deadline(self, state: RetryCallState) -> bool:
        if self.deadline is None:
            return False
        sleep = getattr(state, "upcoming_sleep", 0.0) or 0.0
        self.out_of_time = time.monotonic() + sleep >= self.deadline
        return self.out_of_time

    def _before_sleep(self, state: RetryCallState) -> None:
        if self.on_retry is not None:
            self.on_retry(state)
