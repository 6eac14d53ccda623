"""A participant that replays a JSON script of tool calls, turn by turn, then answers.

Script file (JSON)::

    {
      "turn_style": "message" | "completed" | "input-required",   # default "message"
      "calls_as": "data" | "text",          # how tool calls are sent; default "data"
      "turns": [                            # one entry per answer before the final one
        {"calls": [{"name": "bash", "arguments": {"command": "ls"}}, ...]},
        {"text": "{not json", "delay": 1.5},   # raw text / data parts, to test the green side
        {"data": {"anything": 1}},
        {"fail": "giving up"}                  # end the task as failed
      ],
      "final": {"text": "done", "patch": null}   # the final answer; patch goes in a data part
    }

The user guide describes the format (docs/guide/agent.md, "A scripted participant"). Every
message received is kept, per conversation: :meth:`ScriptedParticipant.received`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.frontends.reference_participants.base import (
    Incoming,
    ReferenceParticipant,
    Reply,
    TurnStyle,
)
from orchestrator.participant.serving import CardInfo
from orchestrator.tools.tool_protocol import ToolCall


class ScriptCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class ScriptTurn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    calls: list[ScriptCall] = Field(default_factory=list)
    text: str | None = None
    data: Any = None
    fail: str | None = None
    delay: float = 0.0


class FinalAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = "done"
    patch: str | None = None
    delay: float = 0.0


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid")

    turn_style: TurnStyle = "message"
    calls_as: Literal["data", "text"] = "data"
    turns: list[ScriptTurn] = Field(default_factory=list)
    final: FinalAnswer = Field(default_factory=FinalAnswer)

    @classmethod
    def load(cls, path: Path) -> Script:
        return cls.model_validate(json.loads(Path(path).read_text()))


class ScriptedParticipant(ReferenceParticipant):
    def __init__(self, script: Script, turn_style: TurnStyle | None = None) -> None:
        super().__init__()
        self.script = script
        self.turn_style = turn_style or script.turn_style
        self.info = CardInfo(
            name="scripted-participant",
            description="Replays a fixed script of swe-sandbox tool calls (for testing).",
        )

    def new_state(self) -> dict[str, Any]:
        return {"turn": 0, "log": []}

    async def respond(self, state: dict[str, Any], incoming: Incoming) -> Reply:
        state["log"].append(incoming)
        index = state["turn"]
        state["turn"] += 1
        if index >= len(self.script.turns):
            final = self.script.final
            return Reply.answer(final.text, final.patch).model_copy(update={"delay": final.delay})
        turn = self.script.turns[index]
        if turn.fail is not None:
            return Reply(fail=turn.fail, delay=turn.delay)
        if turn.calls:
            calls = [
                ToolCall(id=c.id or f"t{index}-c{i}", name=c.name, arguments=c.arguments)
                for i, c in enumerate(turn.calls)
            ]
            reply = Reply.calls(calls, as_text=self.script.calls_as == "text")
        else:
            parts: list = []
            if turn.text is not None:
                parts.append(("text", turn.text))
            if turn.data is not None:
                parts.append(("data", turn.data))
            reply = Reply(parts=parts, final=False)
        return reply.model_copy(update={"delay": turn.delay})

    def received(self, conversation: int = -1) -> list[Incoming]:
        """The messages of one conversation (by order of arrival; default the latest)."""
        return list(self.states.values())[conversation]["log"]
