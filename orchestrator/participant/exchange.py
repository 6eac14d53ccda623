"""The A2A side of a participant's work: messages in one context, each answer read as a stream.

:class:`Exchange` sends a message and collects the participant's answer until its turn ends,
whether the turn ends as a completed message or task, or as a task in ``input-required``.
Parts an earlier turn had (a task snapshot repeats the task's artifacts) are not read twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Any

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientTimeoutError, AgentCardResolutionError
from a2a.helpers import new_text_part
from a2a.types import Artifact, Message, Part, Role, SendMessageRequest, StreamResponse, TaskState
from google.protobuf.json_format import MessageToDict
from pydantic import BaseModel, Field

from orchestrator.models import Reason
from orchestrator.participant.a2a_parts import to_wire
from orchestrator.participant.endings import End, EndedBy, classify, describe
from orchestrator.participant.transcript import Transcript
from orchestrator.participant.transport import HostNotAllowed, host_allowed

# states that end a turn and wait for the next message in the same task
INTERRUPTED = {TaskState.TASK_STATE_INPUT_REQUIRED}
BROKEN: dict[int, str] = {  # by TaskState (an int, as Turn.state holds it)
    TaskState.TASK_STATE_FAILED: "failed",
    TaskState.TASK_STATE_REJECTED: "rejected",
    TaskState.TASK_STATE_CANCELED: "canceled",
    TaskState.TASK_STATE_AUTH_REQUIRED: "auth-required",
}
# states whose status message is part of the participant's answer (not a progress note)
_ANSWER_STATES = {TaskState.TASK_STATE_COMPLETED, *INTERRUPTED, *BROKEN}
_NOTICE_TIMEOUT = 5.0
_CARD_TIMEOUT = 30.0


class Turn(BaseModel):
    """The participant's answer to one message."""

    parts: list[Any] = Field(default_factory=list)
    state: int | None = None  # TaskState of the task that carried the answer, if any
    task_id: str | None = None
    status_text: str = ""
    events: int = 0


class Exchange:
    """Messages to one participant in one A2A context, every event logged."""

    def __init__(self, client: Client, log: Transcript, url: str) -> None:
        self.client = client
        self.log = log
        self.url = url
        self.context_id = str(uuid.uuid4())
        self.task_id: str | None = None  # set while the participant's task is input-required
        self.seen: set[str] = set()  # messages and artifacts already read

    def message(self, parts: list[Part]) -> Message:
        return Message(
            role=Role.ROLE_USER,
            message_id=str(uuid.uuid4()),
            context_id=self.context_id,
            task_id=self.task_id,
            parts=parts,
        )

    async def turn(self, message: Message, wait: float, *, first: bool) -> Turn:
        """Send ``message``; collect the answer until the turn ends. Raises ``TimeoutError``
        after ``wait`` seconds, :class:`End` when the exchange fails."""
        self.log.write("send", message=MessageToDict(message))
        turn = Turn()
        started = time.monotonic()
        try:
            async with asyncio.timeout(wait), _stream(self.client, message) as events:
                async for event in events:
                    self._collect(event, turn)
        except (TimeoutError, A2AClientTimeoutError) as exc:
            raise TimeoutError from exc
        except End:
            raise
        except Exception as exc:  # noqa: BLE001 - classified below
            raise classify(exc, self.url, first=first) from exc
        finally:
            self.log.write("turn_end", seconds=round(time.monotonic() - started, 3))
        if turn.events == 0:
            raise End(
                EndedBy.PROTOCOL_ERROR,
                Reason.PARTICIPANT_PROTOCOL,
                "the participant answered with no message and no task",
            )
        return turn

    def _collect(self, event: StreamResponse, turn: Turn) -> None:
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

    def _take(self, turn: Turn, carrier: Message | Artifact) -> list[Any]:
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

    async def notify(self, message: str) -> None:
        """A final text message to the participant; whatever it answers is not waited for."""
        notice = self.message(
            [new_text_part(f"Stop: {message}. No more tool calls will be run; the work ends.")]
        )
        self.log.write("send", message=MessageToDict(notice), notice=True)
        try:
            async with asyncio.timeout(_NOTICE_TIMEOUT), _stream(self.client, notice) as events:
                async for event in events:
                    kind = event.WhichOneof("payload")
                    if kind:
                        self.log.write(
                            "receive", kind=kind, payload=MessageToDict(getattr(event, kind))
                        )
                    break
        except Exception as exc:  # noqa: BLE001 - a notice is best effort; its failure is logged
            self.log.write("notice_failed", error=describe(exc))


async def connect(
    http: httpx.AsyncClient, url: str, log: Transcript, allowed_hosts: Sequence[str] = ()
) -> tuple[Client, str | None]:
    """A client for the participant at ``url`` made from its agent card, and the card's name;
    :class:`End` when the card cannot be fetched or used, or names an interface on a host
    outside ``allowed_hosts``."""
    try:
        card = await asyncio.wait_for(A2ACardResolver(http, url).get_agent_card(), _CARD_TIMEOUT)
    except HostNotAllowed as exc:
        raise End(
            EndedBy.PROTOCOL_ERROR,
            Reason.PARTICIPANT_PROTOCOL,
            f"the participant at {url} sent the green agent elsewhere: {exc}",
        ) from exc
    except (AgentCardResolutionError, httpx.HTTPError, OSError, TimeoutError) as exc:
        raise End(
            EndedBy.UNREACHABLE,
            Reason.PARTICIPANT_UNREACHABLE,
            f"cannot reach the participant at {url}: {describe(exc)}",
        ) from exc
    except Exception as exc:  # noqa: BLE001 - a card we cannot read
        raise End(
            EndedBy.PROTOCOL_ERROR,
            Reason.PARTICIPANT_PROTOCOL,
            f"the participant at {url} has no usable agent card: {describe(exc)}",
        ) from exc
    log.write("card", card=MessageToDict(card))
    for interface in card.supported_interfaces:
        if not host_allowed(interface.url, allowed_hosts):
            raise End(
                EndedBy.PROTOCOL_ERROR,
                Reason.PARTICIPANT_PROTOCOL,
                f"the participant's agent card names the interface {interface.url[:200]}, whose "
                "host is not on the green agent's allow-list of participant hosts "
                f"({', '.join(allowed_hosts)})",
            )
    try:
        client = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
    except Exception as exc:  # noqa: BLE001 - e.g. no JSON-RPC interface
        raise End(
            EndedBy.PROTOCOL_ERROR,
            Reason.PARTICIPANT_PROTOCOL,
            f"cannot talk to the participant at {url} with its card: {describe(exc)}",
        ) from exc
    return client, card.name or None


@contextlib.asynccontextmanager
async def _stream(client: Client, message: Message) -> AsyncIterator[AsyncIterator[StreamResponse]]:
    events = client.send_message(SendMessageRequest(message=message))
    try:
        yield events
    finally:
        with contextlib.suppress(Exception):
            if isinstance(events, AsyncGenerator):  # annotated as an iterator; is a generator
                await events.aclose()
