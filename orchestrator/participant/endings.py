"""How a participant's work ends: :class:`EndedBy`, and failures read as endings."""

from __future__ import annotations

from enum import StrEnum

import httpx
from a2a.utils.errors import A2AError

from orchestrator.models import Reason
from orchestrator.participant.transport import ReplyTooLarge


class EndedBy(StrEnum):
    ANSWER = "answer"
    TOOL_LIMIT = "tool_limit"
    INSTANCE_TIMEOUT = "instance_timeout"
    REPLY_TIMEOUT = "reply_timeout"
    UNREACHABLE = "unreachable"
    DISCONNECTED = "disconnected"
    TASK_FAILED = "task_failed"
    PROTOCOL_ERROR = "protocol_error"
    INFRASTRUCTURE = "infrastructure"
    DISK_LIMIT = "disk_limit"


class End(Exception):
    """Ends the run with an outcome (raised anywhere inside the loop)."""

    def __init__(self, ended_by: EndedBy, reason: Reason | None, message: str) -> None:
        super().__init__(message)
        self.ended_by = ended_by
        self.reason = reason
        self.message = message


def classify(exc: BaseException, url: str, first: bool) -> End:
    """An exception from one exchange as the end of the run."""
    for cause in chain(exc):
        if isinstance(cause, ReplyTooLarge):
            return End(EndedBy.PROTOCOL_ERROR, Reason.PARTICIPANT_PROTOCOL, str(cause))
    for cause in chain(exc):
        if isinstance(cause, httpx.TimeoutException):
            return End(
                EndedBy.REPLY_TIMEOUT,
                Reason.PARTICIPANT_TIMEOUT,
                f"the connection to the participant timed out: {describe(cause)}",
            )
        if isinstance(cause, httpx.TransportError | ConnectionError):
            if isinstance(cause, httpx.ConnectError) and first:
                return End(
                    EndedBy.UNREACHABLE,
                    Reason.PARTICIPANT_UNREACHABLE,
                    f"cannot reach the participant at {url}: {describe(cause)}",
                )
            return End(
                EndedBy.DISCONNECTED,
                Reason.PARTICIPANT_UNREACHABLE,
                f"the connection to the participant at {url} broke: {describe(cause)}",
            )
    kind = "an A2A error" if isinstance(exc, A2AError) else "an error"
    return End(
        EndedBy.PROTOCOL_ERROR,
        Reason.PARTICIPANT_PROTOCOL,
        f"the participant's answer caused {kind}: {describe(exc)}",
    )


def chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__
