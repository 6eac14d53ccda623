"""What every reference participant shares: one A2A executor that runs turns in either style.

A participant implements :meth:`ReferenceParticipant.respond`: given what the green agent sent
(the task, or tool results), say what to send back (tool calls, or a final answer). The
executor turns that into A2A events in the participant's turn style:

- ``message``: every answer is a plain ``Message``;
- ``completed``: every answer is a new ``Task`` that ends ``completed`` with the answer as an
  artifact;
- ``input-required``: one ``Task`` for the whole instance, in ``input-required`` while it waits
  for tool results (the calls in the status message), ``completed`` with the final answer.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from abc import ABC, abstractmethod
from typing import Any, Literal

from a2a.helpers import new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Message, Role
from pydantic import BaseModel, Field

from orchestrator.participant.a2a_parts import enqueue_task_once, from_wire, to_wire
from orchestrator.participant.serving import CardInfo
from orchestrator.participant.wire import (
    WirePart,
    parse_tool_results,
    read_task_spec,
    tool_call_wire,
)
from orchestrator.tools.tool_protocol import ToolCall, ToolResult

TurnStyle = Literal["message", "completed", "input-required"]
TURN_STYLES: tuple[str, ...] = ("message", "completed", "input-required")


class Incoming(BaseModel):
    """One message from the green agent, read."""

    parts: list[WirePart]
    spec: dict[str, Any] | None = None  # the swe-sandbox task (first message only)
    results: list[ToolResult] = Field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(v for kind, v in self.parts if kind == "text")


class Reply(BaseModel):
    """One answer: ``parts`` to send; ``final`` ends the instance; ``fail`` fails the task."""

    parts: list[WirePart] = Field(default_factory=list)
    final: bool = True
    fail: str | None = None
    delay: float = 0.0

    @classmethod
    def calls(cls, calls: list[ToolCall], as_text: bool = False) -> Reply:
        """Tool calls as data parts, or as one JSON text (a list when there are several)."""
        wire = [tool_call_wire(c) for c in calls]
        if as_text:
            body = wire[0] if len(wire) == 1 else wire
            return cls(parts=[("text", json.dumps(body))], final=False)
        return cls(parts=[("data", w) for w in wire], final=False)

    @classmethod
    def answer(cls, text: str, patch: str | None = None) -> Reply:
        parts: list[WirePart] = [("text", text)]
        if patch is not None:
            parts.append(("data", {"type": "final", "patch": patch}))
        return cls(parts=parts, final=True)


class ReferenceParticipant(ABC):
    """A participant with per-conversation state, served by :class:`TurnExecutor`."""

    info: CardInfo
    turn_style: TurnStyle = "message"

    def __init__(self) -> None:
        # one state per A2A context id (one instance), in order of arrival
        self.states: dict[str, dict[str, Any]] = {}

    def new_state(self) -> dict[str, Any]:
        return {}

    @abstractmethod
    async def respond(self, state: dict[str, Any], incoming: Incoming) -> Reply: ...

    def executor(self) -> TurnExecutor:
        return TurnExecutor(self)


class TurnExecutor(AgentExecutor):
    """Runs a :class:`ReferenceParticipant`, one call of ``respond`` per incoming message."""

    def __init__(self, participant: ReferenceParticipant) -> None:
        self.participant = participant

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None and context.context_id and context.task_id
        parts = to_wire(context.message.parts)
        incoming = Incoming(
            parts=parts, spec=read_task_spec(parts), results=parse_tool_results(parts)
        )
        states = self.participant.states
        state = states.setdefault(context.context_id, self.participant.new_state())
        try:
            reply = await self.participant.respond(state, incoming)
        except Exception as exc:  # noqa: BLE001 - reported to the caller as a failed task
            reply = Reply(fail=f"{self.participant.info.name} failed: {exc!r}")
        if reply.delay:
            await asyncio.sleep(reply.delay)
        style = self.participant.turn_style
        if style == "message" and reply.fail is None:
            await event_queue.enqueue_event(
                Message(
                    role=Role.ROLE_AGENT,
                    parts=from_wire(reply.parts),
                    message_id=str(uuid.uuid4()),
                    context_id=context.context_id,
                )
            )
            return
        await enqueue_task_once(context, event_queue)
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.start_work()
        if reply.fail is not None:
            await updater.failed(updater.new_agent_message([new_text_part(reply.fail)]))
        elif style == "completed":
            await updater.add_artifact(
                from_wire(reply.parts), name="answer" if reply.final else "tool_calls"
            )
            await updater.complete()
        elif reply.final:
            await updater.complete(updater.new_agent_message(from_wire(reply.parts)))
        else:
            await updater.requires_input(updater.new_agent_message(from_wire(reply.parts)))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id and context.context_id
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()
