"""Phase 5: the green agent as an A2A client of the participant (protocol ``swe-sandbox`` v1).

:func:`run_participant` sends the task, answers tool calls with the results of a tool runner,
and returns when the participant gives its final answer or a limit, timeout or failure ends
the work. It never raises: every failure becomes a :class:`ParticipantOutcome` with a reason.
Every message, tool call, tool result and timing goes to a JSON-lines transcript.

Failures and their reasons:

- the card cannot be fetched, the connection is refused, or it drops mid-run (the
  participant's server died): ``participant_unreachable``;
- no answer within the reply timeout, or the instance's time ran out: ``participant_timeout``;
- more tool calls than allowed: ``participant_limit``;
- the participant's task ends ``failed``/``rejected``/``canceled``/``auth-required``, its server
  returns a JSON-RPC error, or it keeps sending unreadable tool calls: ``participant_protocol``;
- a reply (the final answer included) larger than ``max_reply_bytes``: ``participant_protocol``
  (it is read as a stream and dropped at the limit, so the green agent's memory stays flat);
- the container goes over its disk budget while a tool runs: ``disk_limit``;
- the tool runner itself fails (the container died): ``infrastructure``.

A malformed tool call (invalid JSON, no id, no name, arguments that are not an object or too
large) is answered with an error result, so the participant can correct itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from enum import StrEnum
from pathlib import Path
from typing import IO, Any

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientTimeoutError, AgentCardResolutionError
from a2a.helpers import new_data_part, new_text_part
from a2a.types import Artifact, Message, Part, Role, SendMessageRequest, StreamResponse, TaskState
from a2a.utils.errors import A2AError
from google.protobuf.json_format import MessageToDict
from pydantic import BaseModel, Field

from orchestrator.errors import SandboxError
from orchestrator.models import Instance, Reason
from orchestrator.participant.a2a_parts import to_wire
from orchestrator.participant.tool_protocol import ToolCall, ToolResult
from orchestrator.participant.wire import ParsedTurn, WireLimits, parse_turn, task_spec, task_text
from orchestrator.sandbox import DiskLimitExceeded, Sandbox
from orchestrator.settings import Settings

ToolRunner = Callable[[ToolCall, float], ToolResult]
"""Runs one tool call with a timeout in seconds; returns an error result for a bad call."""

# states that end a turn and wait for the next message in the same task
_INTERRUPTED = {TaskState.TASK_STATE_INPUT_REQUIRED}
_BROKEN = {
    TaskState.TASK_STATE_FAILED: "failed",
    TaskState.TASK_STATE_REJECTED: "rejected",
    TaskState.TASK_STATE_CANCELED: "canceled",
    TaskState.TASK_STATE_AUTH_REQUIRED: "auth-required",
}
# states whose status message is part of the participant's answer (not a progress note)
_ANSWER_STATES = {TaskState.TASK_STATE_COMPLETED, *_INTERRUPTED, *_BROKEN}
_TRANSCRIPT_STRING_CAP = 20_000
_CARD_TIMEOUT = 30.0
_NOTICE_TIMEOUT = 5.0
# a tool runner gets this long past its own timeout before it counts as hung
_RUNNER_GRACE = 60.0


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


class ReplyTooLarge(Exception):
    """The participant sent more bytes in one reply than the green agent reads."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"the participant's reply is larger than {limit} bytes, the most the green agent "
            "reads from one reply (setting max_reply_bytes)"
        )


class _CappedStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, limit: int) -> None:
        self.inner = inner
        self.limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        read = 0
        async for chunk in self.inner:
            read += len(chunk)
            if read > self.limit:
                raise ReplyTooLarge(self.limit)
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


class CappedTransport(httpx.AsyncBaseTransport):
    """An HTTP transport that reads at most ``limit`` bytes of any one response body.

    Bodies are read as streams, so a huge answer costs no more memory than the limit;
    compressed bodies are refused (their decoded size is what would count).
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            await response.aclose()
            raise ReplyTooLarge(self.limit) from ValueError(f"compressed reply ({encoding})")
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_CappedStream(response.stream, self.limit),
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


class ParticipantLimits(BaseModel):
    max_tool_calls: int = 250
    tool_timeout: float = 180.0
    instance_timeout: float = 3600.0
    reply_timeout: float = 900.0
    # tool calls whose JSON arguments are larger than this get an error result
    max_argument_bytes: int = 1_000_000
    # this many answers in a row with nothing but unreadable tool calls end the work
    max_protocol_errors: int = 3
    # bytes read from the participant per reply (per HTTP response)
    max_reply_bytes: int = 20_000_000

    @classmethod
    def from_settings(cls, settings: Settings) -> ParticipantLimits:
        return cls(
            max_tool_calls=settings.max_tool_calls,
            tool_timeout=settings.tool_timeout,
            instance_timeout=settings.instance_timeout,
            reply_timeout=settings.participant_timeout,
            max_reply_bytes=settings.max_reply_bytes,
        )

    def wire(self) -> WireLimits:
        return WireLimits(
            max_tool_calls=self.max_tool_calls,
            tool_timeout=self.tool_timeout,
            instance_timeout=self.instance_timeout,
            reply_timeout=self.reply_timeout,
        )


class ParticipantOutcome(BaseModel):
    """How the participant's work on one instance ended."""

    final_text: str = ""
    final_data: dict[str, Any] | None = None
    tool_calls: int = 0
    turns: int = 0
    reason: Reason | None = None
    message: str = ""
    ended_by: EndedBy
    participant_name: str | None = None
    timings: dict[str, float] = Field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.reason is None


class _End(Exception):
    """Ends the run with an outcome (raised anywhere inside the loop)."""

    def __init__(self, ended_by: EndedBy, reason: Reason | None, message: str) -> None:
        super().__init__(message)
        self.ended_by = ended_by
        self.reason = reason
        self.message = message


class _Turn(BaseModel):
    """The participant's answer to one message."""

    parts: list[Any] = Field(default_factory=list)
    state: int | None = None  # TaskState of the task that carried the answer, if any
    task_id: str | None = None
    status_text: str = ""
    events: int = 0


class Transcript:
    """``transcript.jsonl``: one JSON object per event, long strings capped."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] = path.open("a", encoding="utf-8")
        self._start = time.monotonic()

    def write(self, event: str, **fields: Any) -> None:
        record = {
            "event": event,
            "t": round(time.monotonic() - self._start, 3),
            "time": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
            **_capped(fields),
        }
        self._file.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def _capped(value: Any) -> Any:
    if isinstance(value, str) and len(value) > _TRANSCRIPT_STRING_CAP:
        cut = len(value) - _TRANSCRIPT_STRING_CAP
        return value[:_TRANSCRIPT_STRING_CAP] + f"\n[... {cut} more characters not shown ...]"
    if isinstance(value, dict):
        return {k: _capped(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_capped(v) for v in value]
    return value


def default_tools() -> list[dict[str, Any]]:
    """The sandbox tools' schemas (``sandbox_tools.schemas.TOOLS``)."""
    from sandbox_tools.schemas import TOOLS

    return [dict(t) for t in TOOLS]


def sandbox_tool_runner(sandbox: Sandbox, *, output_limit: int = 30_000) -> ToolRunner:
    """A :data:`ToolRunner` for the sandbox tools in ``sandbox``: the per-call timeout is the
    default and the cap (a bash call may ask for less, never for more)."""
    from orchestrator.participant.tools_host import run_tool

    def run(call: ToolCall, timeout: float) -> ToolResult:
        try:
            return run_tool(
                sandbox, call, timeout=timeout, max_timeout=timeout, output_limit=output_limit
            )
        except DiskLimitExceeded:
            raise
        except SandboxError:
            # the participant can stop its own container (`kill 1` ends its init): start it
            # again and say so, instead of blaming the infrastructure; a daemon that went
            # away or a container that is gone still raises
            if not sandbox.exists() or sandbox.is_running():
                raise
            sandbox.kill_processes()
            return ToolResult(
                id=call.id,
                output="The container had stopped (its first process ended, e.g. after "
                "`kill 1`). It was started again: files are kept, running processes and "
                "the shell's state are lost. This call did not run.",
                error=True,
            )

    return run


async def run_participant(
    url: str,
    instance: Instance,
    tool_runner: ToolRunner,
    limits: ParticipantLimits,
    transcript: Path,
    *,
    tools: list[dict[str, Any]] | None = None,
) -> ParticipantOutcome:
    """Let the participant at ``url`` work on ``instance``; never raises (see module doc).

    ``tool_runner`` is called in a worker thread, one call at a time, with the call's timeout.
    ``tools`` are the schemas announced to the participant (default: :func:`default_tools`).
    """
    try:
        log = Transcript(transcript)
    except OSError as exc:
        return ParticipantOutcome(
            ended_by=EndedBy.INFRASTRUCTURE,
            reason=Reason.INFRASTRUCTURE,
            message=f"cannot write the transcript {transcript}: {exc}",
        )
    run = _Run(url, instance, tool_runner, limits, log)
    try:
        return await run.run(tools)
    except Exception as exc:  # noqa: BLE001 - the green agent must survive any participant
        log.write("error", error=repr(exc))
        return run.outcome(
            EndedBy.INFRASTRUCTURE, Reason.INFRASTRUCTURE, f"internal error: {exc!r}"
        )
    finally:
        log.close()


class _Run:
    def __init__(
        self,
        url: str,
        instance: Instance,
        tool_runner: ToolRunner,
        limits: ParticipantLimits,
        log: Transcript,
    ) -> None:
        self.url = url
        self.instance = instance
        self.tool_runner = tool_runner
        self.limits = limits
        self.log = log
        self.started = time.monotonic()
        self.deadline = self.started + limits.instance_timeout
        self.context_id = str(uuid.uuid4())
        self.task_id: str | None = None  # set while the participant's task is input-required
        self.tool_calls = 0
        self.turns = 0
        self.waiting = 0.0
        self.tool_time = 0.0
        self.last: ParsedTurn | None = None
        self.participant_name: str | None = None
        self.seen: set[str] = set()  # messages and artifacts already read

    # ------------------------------------------------------------------ the loop
    async def run(self, tools: list[dict[str, Any]] | None) -> ParticipantOutcome:
        self.log.write("start", url=self.url, instance_id=self.instance.instance_id)
        try:
            tools = default_tools() if tools is None else tools
            timeout = httpx.Timeout(10.0, read=self.limits.reply_timeout + 30.0, write=60.0)
            async with httpx.AsyncClient(
                timeout=timeout,
                transport=CappedTransport(self.limits.max_reply_bytes),
                headers={"Accept-Encoding": "identity"},
            ) as http:
                client = await self._connect(http)
                try:
                    outcome = await self._converse(client, tools)
                finally:
                    with contextlib.suppress(Exception):
                        await client.close()
        except _End as end:
            outcome = self.outcome(end.ended_by, end.reason, end.message)
        self.log.write(
            "end",
            ended_by=outcome.ended_by,
            reason=outcome.reason,
            message=outcome.message,
            tool_calls=outcome.tool_calls,
            timings=outcome.timings,
        )
        return outcome

    async def _connect(self, http: httpx.AsyncClient) -> Client:
        try:
            card = await asyncio.wait_for(
                A2ACardResolver(http, self.url).get_agent_card(), _CARD_TIMEOUT
            )
        except (AgentCardResolutionError, httpx.HTTPError, OSError, TimeoutError) as exc:
            raise _End(
                EndedBy.UNREACHABLE,
                Reason.PARTICIPANT_UNREACHABLE,
                f"cannot reach the participant at {self.url}: {_describe(exc)}",
            ) from exc
        except Exception as exc:  # noqa: BLE001 - a card we cannot read
            raise _End(
                EndedBy.PROTOCOL_ERROR,
                Reason.PARTICIPANT_PROTOCOL,
                f"the participant at {self.url} has no usable agent card: {_describe(exc)}",
            ) from exc
        self.participant_name = card.name or None
        self.log.write("card", card=MessageToDict(card))
        try:
            return ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
        except Exception as exc:  # noqa: BLE001 - e.g. no JSON-RPC interface
            raise _End(
                EndedBy.PROTOCOL_ERROR,
                Reason.PARTICIPANT_PROTOCOL,
                f"cannot talk to the participant at {self.url} with its card: {_describe(exc)}",
            ) from exc

    async def _converse(self, client: Client, tools: list[dict[str, Any]]) -> ParticipantOutcome:
        wire_limits = self.limits.wire()
        message = self._message(
            [
                new_text_part(task_text(self.instance, tools, wire_limits)),
                new_data_part(task_spec(self.instance, tools, wire_limits)),
            ]
        )
        protocol_errors = 0
        while True:
            turn = await self._exchange(client, message)
            parsed = parse_turn(turn.parts)
            self.last = parsed
            self.turns += 1
            if turn.state in _BROKEN:
                raise _End(
                    EndedBy.TASK_FAILED,
                    Reason.PARTICIPANT_PROTOCOL,
                    f"the participant's task ended {_BROKEN[turn.state]}"
                    + (f": {turn.status_text}" if turn.status_text else ""),
                )
            if parsed.is_final:
                return self.outcome(EndedBy.ANSWER, None, "the participant gave its answer")
            if all(isinstance(item, ToolResult) for item in parsed.items):
                protocol_errors += 1
                if protocol_errors >= self.limits.max_protocol_errors:
                    raise _End(
                        EndedBy.PROTOCOL_ERROR,
                        Reason.PARTICIPANT_PROTOCOL,
                        f"{protocol_errors} answers in a row held only unreadable tool calls",
                    )
            else:
                protocol_errors = 0
            self.task_id = turn.task_id if turn.state in _INTERRUPTED else None
            results = await self._run_calls(client, parsed)
            message = self._message([new_data_part(r.wire()) for r in results])

    async def _run_calls(self, client: Client, parsed: ParsedTurn) -> list[ToolResult]:
        results: list[ToolResult] = []
        for item in parsed.items:
            if self.tool_calls >= self.limits.max_tool_calls:
                await self._stop(
                    client,
                    EndedBy.TOOL_LIMIT,
                    Reason.PARTICIPANT_LIMIT,
                    f"the tool call limit ({self.limits.max_tool_calls}) is reached",
                )
            self.tool_calls += 1
            if isinstance(item, ToolResult):
                result = item
                self.log.write("tool_error", result=result.wire())
            else:
                result = await self._run_call(client, item)
            results.append(result)
        return results

    async def _run_call(self, client: Client, call: ToolCall) -> ToolResult:
        self.log.write("tool_call", call=call.model_dump())
        size = len(json.dumps(call.arguments))
        if size > self.limits.max_argument_bytes:
            result = ToolResult(
                id=call.id,
                output=(
                    f"The arguments of this call are {size} bytes; the limit is "
                    f"{self.limits.max_argument_bytes}. Write large content in smaller pieces."
                ),
                error=True,
            )
            self.log.write("tool_result", result=result.wire())
            return result
        remaining = await self._time_left(client)
        timeout = min(self.limits.tool_timeout, remaining)
        started = time.monotonic()
        try:
            result = await asyncio.wait_for(
                asyncio.to_thread(self.tool_runner, call, timeout), timeout + _RUNNER_GRACE
            )
        except DiskLimitExceeded as exc:
            self.log.write("tool_runner_error", id=call.id, error=repr(exc))
            await self._stop(client, EndedBy.DISK_LIMIT, Reason.DISK_LIMIT, str(exc))
            raise AssertionError("unreachable") from exc
        except Exception as exc:  # noqa: BLE001 - the sandbox failed, not the participant
            self.log.write("tool_runner_error", id=call.id, error=repr(exc))
            raise _End(
                EndedBy.INFRASTRUCTURE,
                Reason.INFRASTRUCTURE,
                f"running tool {call.name!r} failed: {_describe(exc)}",
            ) from exc
        finally:
            self.tool_time += time.monotonic() - started
        if result.id != call.id:
            result = result.model_copy(update={"id": call.id})
        self.log.write("tool_result", result=result.wire())
        return result

    # ------------------------------------------------------------------ A2A exchanges
    def _message(self, parts: list[Part]) -> Message:
        return Message(
            role=Role.ROLE_USER,
            message_id=str(uuid.uuid4()),
            context_id=self.context_id,
            task_id=self.task_id,
            parts=parts,
        )

    async def _time_left(self, client: Client) -> float:
        """Seconds left for the instance; when none, tell the participant and end."""
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            await self._stop(
                client,
                EndedBy.INSTANCE_TIMEOUT,
                Reason.PARTICIPANT_TIMEOUT,
                f"the time for this instance ({self.limits.instance_timeout:g} s) ran out",
            )
        return remaining

    async def _exchange(self, client: Client, message: Message) -> _Turn:
        """Send ``message``; collect the participant's answer until its turn ends."""
        remaining = await self._time_left(client)
        instance_bound = remaining < self.limits.reply_timeout
        wait = min(self.limits.reply_timeout, remaining)
        self.log.write("send", message=MessageToDict(message))
        turn = _Turn()
        started = time.monotonic()
        try:
            async with asyncio.timeout(wait), _stream(client, message) as events:
                async for event in events:
                    self._collect(event, turn)
        except TimeoutError as exc:
            raise await self._timeout_end(client, instance_bound, wait) from exc
        except A2AClientTimeoutError as exc:
            raise await self._timeout_end(client, instance_bound, wait) from exc
        except _End:
            raise
        except Exception as exc:  # noqa: BLE001 - classified below
            raise _classify(exc, self.url, first=self.turns == 0) from exc
        finally:
            self.waiting += time.monotonic() - started
            self.log.write("turn_end", seconds=round(time.monotonic() - started, 3))
        if turn.events == 0:
            raise _End(
                EndedBy.PROTOCOL_ERROR,
                Reason.PARTICIPANT_PROTOCOL,
                "the participant answered with no message and no task",
            )
        return turn

    def _collect(self, event: StreamResponse, turn: _Turn) -> None:
        kind = event.WhichOneof("payload")
        if kind is None:
            return
        payload = getattr(event, kind)
        self.log.write("receive", kind=kind, payload=MessageToDict(payload))
        turn.events += 1
        if kind == "message":
            self._take(turn, payload)
            return
        if kind == "artifact_update":
            self._take(turn, payload.artifact)
            turn.task_id = payload.task_id or turn.task_id
            return
        status = payload.status
        if kind == "task":
            turn.task_id = payload.id
            for artifact in payload.artifacts:
                self._take(turn, artifact)
        else:
            turn.task_id = payload.task_id or turn.task_id
        turn.state = status.state
        answer = status.HasField("message") and status.message.role != Role.ROLE_USER
        if status.state in _ANSWER_STATES and answer:
            parts = self._take(turn, status.message)
            turn.status_text = "\n".join(v for k, v in parts if k == "text")

    def _take(self, turn: _Turn, carrier: Message | Artifact) -> list[Any]:
        """Add the parts of a message or artifact to the turn, unless an earlier turn had them.

        A task snapshot repeats the task's earlier artifacts; their calls must not run twice.
        """
        parts = to_wire(carrier.parts)
        ident = carrier.message_id if isinstance(carrier, Message) else carrier.artifact_id
        key = f"{ident}:{hash(carrier.SerializeToString(deterministic=True))}"
        if key in self.seen:
            return []
        self.seen.add(key)
        turn.parts.extend(parts)
        return parts

    async def _timeout_end(self, client: Client, instance_bound: bool, wait: float) -> _End:
        if instance_bound:
            end = _End(
                EndedBy.INSTANCE_TIMEOUT,
                Reason.PARTICIPANT_TIMEOUT,
                f"the time for this instance ({self.limits.instance_timeout:g} s) ran out "
                "while waiting for the participant",
            )
        else:
            end = _End(
                EndedBy.REPLY_TIMEOUT,
                Reason.PARTICIPANT_TIMEOUT,
                f"the participant did not answer within {wait:g} s",
            )
        await self._notify(client, end.message)
        return end

    async def _stop(self, client: Client, ended_by: EndedBy, reason: Reason, message: str) -> None:
        """Tell the participant that the work is over, then end the run."""
        await self._notify(client, message)
        raise _End(ended_by, reason, message)

    async def _notify(self, client: Client, message: str) -> None:
        """A final text message to the participant; whatever it answers is not waited for."""
        notice = self._message(
            [new_text_part(f"Stop: {message}. No more tool calls will be run; the work ends.")]
        )
        self.log.write("send", message=MessageToDict(notice), notice=True)
        try:
            async with asyncio.timeout(_NOTICE_TIMEOUT), _stream(client, notice) as events:
                async for event in events:
                    kind = event.WhichOneof("payload")
                    if kind:
                        self.log.write(
                            "receive", kind=kind, payload=MessageToDict(getattr(event, kind))
                        )
                    break
        except Exception as exc:  # noqa: BLE001 - best effort
            self.log.write("notice_failed", error=_describe(exc))

    # ------------------------------------------------------------------ the result
    def outcome(self, ended_by: EndedBy, reason: Reason | None, message: str) -> ParticipantOutcome:
        total = time.monotonic() - self.started
        last = self.last if ended_by == EndedBy.ANSWER else None
        return ParticipantOutcome(
            final_text=last.text if last else "",
            final_data=last.final_data() if last else None,
            tool_calls=self.tool_calls,
            turns=self.turns,
            reason=reason,
            message=message,
            ended_by=ended_by,
            participant_name=self.participant_name,
            timings={
                "participant": round(total, 3),
                "participant_waiting": round(self.waiting, 3),
                "tools": round(self.tool_time, 3),
            },
        )


@contextlib.asynccontextmanager
async def _stream(client: Client, message: Message) -> AsyncIterator[AsyncIterator[StreamResponse]]:
    events = client.send_message(SendMessageRequest(message=message))
    try:
        yield events
    finally:
        with contextlib.suppress(Exception):
            await events.aclose()


def _classify(exc: BaseException, url: str, first: bool) -> _End:
    """An exception from one exchange as the end of the run."""
    for cause in _chain(exc):
        if isinstance(cause, ReplyTooLarge):
            return _End(EndedBy.PROTOCOL_ERROR, Reason.PARTICIPANT_PROTOCOL, str(cause))
    for cause in _chain(exc):
        if isinstance(cause, httpx.TimeoutException):
            return _End(
                EndedBy.REPLY_TIMEOUT,
                Reason.PARTICIPANT_TIMEOUT,
                f"the connection to the participant timed out: {_describe(cause)}",
            )
        if isinstance(cause, httpx.TransportError | ConnectionError):
            if isinstance(cause, httpx.ConnectError) and first:
                return _End(
                    EndedBy.UNREACHABLE,
                    Reason.PARTICIPANT_UNREACHABLE,
                    f"cannot reach the participant at {url}: {_describe(cause)}",
                )
            return _End(
                EndedBy.DISCONNECTED,
                Reason.PARTICIPANT_UNREACHABLE,
                f"the connection to the participant at {url} broke: {_describe(cause)}",
            )
    kind = "an A2A error" if isinstance(exc, A2AError) else "an error"
    return _End(
        EndedBy.PROTOCOL_ERROR,
        Reason.PARTICIPANT_PROTOCOL,
        f"the participant's answer caused {kind}: {_describe(exc)}",
    )


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__
