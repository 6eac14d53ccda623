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
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
from a2a.helpers import new_data_part, new_text_part
from a2a.types import Message
from pydantic import BaseModel, ConfigDict, Field

from orchestrator.models import Instance, Reason
from orchestrator.participant.endings import End, EndedBy, describe
from orchestrator.participant.exchange import BROKEN, INTERRUPTED, Exchange, Turn, connect
from orchestrator.participant.transcript import Transcript
from orchestrator.participant.transport import CappedTransport, allow_list_hook
from orchestrator.participant.wire import ParsedTurn, WireLimits, parse_turn, task_spec, task_text
from orchestrator.sandbox import DiskLimitExceeded
from orchestrator.settings import ParticipantConfig
from orchestrator.settings.base import default_of
from orchestrator.tools.tool_protocol import ToolCall, ToolResult
from orchestrator.tools.tools_host import ToolRunner, default_tools

# a tool runner gets this long past its own timeout before it counts as hung
_RUNNER_GRACE = 60.0


class ParticipantLimits(BaseModel):
    # defaults: those of the settings (participant group), as this model's types (180.0)
    model_config = ConfigDict(validate_default=True)

    max_tool_calls: int = default_of(ParticipantConfig, "max_tool_calls")
    tool_timeout: float = default_of(ParticipantConfig, "tool_timeout")
    instance_timeout: float = default_of(ParticipantConfig, "instance_timeout")
    reply_timeout: float = default_of(ParticipantConfig, "participant_timeout")
    # tool calls whose JSON arguments are larger than this get an error result
    max_argument_bytes: int = 1_000_000
    # this many answers in a row with nothing but unreadable tool calls end the work
    max_protocol_errors: int = 3
    # bytes read from the participant per reply (per HTTP response)
    max_reply_bytes: int = default_of(ParticipantConfig, "max_reply_bytes")

    @classmethod
    def from_settings(cls, settings: ParticipantConfig) -> ParticipantLimits:
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
    # a patch given as such (a predictions file): phase 6 takes it as it is, from no answer
    patch: str | None = None
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


async def run_participant(
    url: str,
    instance: Instance,
    tool_runner: ToolRunner,
    limits: ParticipantLimits,
    transcript: Path,
    *,
    tools: list[dict[str, Any]] | None = None,
    allowed_hosts: Sequence[str] = (),
) -> ParticipantOutcome:
    """Let the participant at ``url`` work on ``instance``; never raises (see module doc).

    ``tool_runner`` is called in a worker thread, one call at a time, with the call's timeout.
    ``tools`` are the schemas announced to the participant (default: :func:`default_tools`).
    With ``allowed_hosts`` (globs) no request goes to another host: not the agent card's
    interface URL, not a redirect (``participant_protocol``).
    """
    try:
        log = Transcript(transcript)
    except OSError as exc:
        return ParticipantOutcome(
            ended_by=EndedBy.INFRASTRUCTURE,
            reason=Reason.INFRASTRUCTURE,
            message=f"cannot write the transcript {transcript}: {exc}",
        )
    run = _Run(url, instance, tool_runner, limits, log, allowed_hosts)
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
        allowed_hosts: Sequence[str] = (),
    ) -> None:
        self.url = url
        self.allowed_hosts = list(allowed_hosts)
        self.instance = instance
        self.tool_runner = tool_runner
        self.limits = limits
        self.log = log
        self.started = time.monotonic()
        self.deadline = self.started + limits.instance_timeout
        self.tool_calls = 0
        self.turns = 0
        self.waiting = 0.0
        self.tool_time = 0.0
        self.last: ParsedTurn | None = None
        self.participant_name: str | None = None
        self.a2a: Exchange | None = None  # once connected

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
                event_hooks={"request": [allow_list_hook(self.allowed_hosts)]},
            ) as http:
                client, self.participant_name = await connect(
                    http, self.url, self.log, self.allowed_hosts
                )
                self.a2a = Exchange(client, self.log, self.url)
                try:
                    outcome = await self._converse(self.a2a, tools)
                finally:
                    with contextlib.suppress(Exception):
                        await client.close()
        except End as end:
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

    async def _converse(self, a2a: Exchange, tools: list[dict[str, Any]]) -> ParticipantOutcome:
        wire_limits = self.limits.wire()
        message = a2a.message(
            [
                new_text_part(task_text(self.instance, tools, wire_limits)),
                new_data_part(task_spec(self.instance, tools, wire_limits)),
            ]
        )
        protocol_errors = 0
        while True:
            turn = await self._exchange(a2a, message)
            parsed = parse_turn(turn.parts)
            self.last = parsed
            self.turns += 1
            if turn.state in BROKEN:
                raise End(
                    EndedBy.TASK_FAILED,
                    Reason.PARTICIPANT_PROTOCOL,
                    f"the participant's task ended {BROKEN[turn.state]}"
                    + (f": {turn.status_text}" if turn.status_text else ""),
                )
            if parsed.is_final:
                return self.outcome(EndedBy.ANSWER, None, "the participant gave its answer")
            if all(isinstance(item, ToolResult) for item in parsed.items):
                protocol_errors += 1
                if protocol_errors >= self.limits.max_protocol_errors:
                    raise End(
                        EndedBy.PROTOCOL_ERROR,
                        Reason.PARTICIPANT_PROTOCOL,
                        f"{protocol_errors} answers in a row held only unreadable tool calls",
                    )
            else:
                protocol_errors = 0
            a2a.task_id = turn.task_id if turn.state in INTERRUPTED else None
            results = await self._run_calls(parsed)
            message = a2a.message([new_data_part(r.wire()) for r in results])

    async def _run_calls(self, parsed: ParsedTurn) -> list[ToolResult]:
        results: list[ToolResult] = []
        for item in parsed.items:
            if self.tool_calls >= self.limits.max_tool_calls:
                await self._stop(
                    EndedBy.TOOL_LIMIT,
                    Reason.PARTICIPANT_LIMIT,
                    f"the tool call limit ({self.limits.max_tool_calls}) is reached",
                )
            self.tool_calls += 1
            if isinstance(item, ToolResult):
                result = item
                self.log.write("tool_error", result=result.wire())
            else:
                result = await self._run_call(item)
            results.append(result)
        return results

    async def _run_call(self, call: ToolCall) -> ToolResult:
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
        remaining = await self._time_left()
        timeout = min(self.limits.tool_timeout, remaining)
        started = time.monotonic()
        try:
            result = await asyncio.wait_for(
                asyncio.to_thread(self.tool_runner, call, timeout), timeout + _RUNNER_GRACE
            )
        except DiskLimitExceeded as exc:
            self.log.write("tool_runner_error", id=call.id, error=repr(exc))
            await self._stop(EndedBy.DISK_LIMIT, Reason.DISK_LIMIT, str(exc))
            raise AssertionError("unreachable") from exc
        except Exception as exc:  # noqa: BLE001 - the sandbox failed, not the participant
            self.log.write("tool_runner_error", id=call.id, error=repr(exc))
            raise End(
                EndedBy.INFRASTRUCTURE,
                Reason.INFRASTRUCTURE,
                f"running tool {call.name!r} failed: {describe(exc)}",
            ) from exc
        finally:
            self.tool_time += time.monotonic() - started
        if result.id != call.id:
            result = result.model_copy(update={"id": call.id})
        self.log.write("tool_result", result=result.wire())
        return result

    # ------------------------------------------------------------------ time and endings
    async def _time_left(self) -> float:
        """Seconds left for the instance; when none, tell the participant and end."""
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            await self._stop(
                EndedBy.INSTANCE_TIMEOUT,
                Reason.PARTICIPANT_TIMEOUT,
                f"the time for this instance ({self.limits.instance_timeout:g} s) ran out",
            )
        return remaining

    async def _exchange(self, a2a: Exchange, message: Message) -> Turn:
        """Send ``message`` and read the answer, within the reply and the instance's time."""
        remaining = await self._time_left()
        instance_bound = remaining < self.limits.reply_timeout
        wait = min(self.limits.reply_timeout, remaining)
        started = time.monotonic()
        try:
            return await a2a.turn(message, wait, first=self.turns == 0)
        except TimeoutError as exc:
            raise await self._timeout_end(instance_bound, wait) from exc
        finally:
            self.waiting += time.monotonic() - started

    async def _timeout_end(self, instance_bound: bool, wait: float) -> End:
        if instance_bound:
            end = End(
                EndedBy.INSTANCE_TIMEOUT,
                Reason.PARTICIPANT_TIMEOUT,
                f"the time for this instance ({self.limits.instance_timeout:g} s) ran out "
                "while waiting for the participant",
            )
        else:
            end = End(
                EndedBy.REPLY_TIMEOUT,
                Reason.PARTICIPANT_TIMEOUT,
                f"the participant did not answer within {wait:g} s",
            )
        if self.a2a is not None:
            await self.a2a.notify(end.message)
        return end

    async def _stop(self, ended_by: EndedBy, reason: Reason, message: str) -> None:
        """Tell the participant that the work is over, then end the run."""
        if self.a2a is not None:
            await self.a2a.notify(message)
        raise End(ended_by, reason, message)

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
