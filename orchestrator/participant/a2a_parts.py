"""Between A2A ``Part`` protobufs and the plain :data:`~.wire.WirePart` tuples."""

from __future__ import annotations

from collections.abc import Iterable

from a2a.helpers import new_data_part, new_task, new_text_part
from a2a.server.agent_execution import RequestContext
from a2a.server.events import EventQueue
from a2a.types import Part, TaskState
from google.protobuf.json_format import MessageToDict

from orchestrator.participant.wire import WirePart


def to_wire(parts: Iterable[Part]) -> list[WirePart]:
    """Text and data parts in order (files and URLs are not part of the protocol)."""
    out: list[WirePart] = []
    for part in parts:
        if part.HasField("text"):
            out.append(("text", part.text))
        elif part.HasField("data"):
            out.append(("data", MessageToDict(part.data)))
    return out


def from_wire(parts: Iterable[WirePart]) -> list[Part]:
    return [new_text_part(v) if kind == "text" else new_data_part(v) for kind, v in parts]


async def enqueue_task_once(context: RequestContext, event_queue: EventQueue) -> None:
    """A2A wants a Task on the queue before any status update: enqueue it on the first turn."""
    if context.current_task is None:
        task_id, context_id, message = context.task_id, context.context_id, context.message
        # A2A's request handler sets them before it calls the executor
        assert task_id is not None and context_id is not None and message is not None
        await event_queue.enqueue_event(
            new_task(task_id, context_id, TaskState.TASK_STATE_SUBMITTED, history=[message])
        )
