"""A hostile participant: it speaks the real protocol, and tries to cheat or to break things.

It is the adversary of ``tests/test_hostile.py``. For each instance it follows a
:class:`Plan` (chosen by the instance id in the task, ``"*"`` for any): a list of named bash
:class:`Step` s, one tool call per turn, then a final answer, which may carry a patch or
``answer_bytes`` of padding (an oversized answer). Every tool result is kept, by instance and
step name (:meth:`HostileParticipant.result`), so that a test can check what the participant
could see: the history after the base commit, the gold patch, the test patch.

The plans themselves (history snooping, planted ``conftest.py``/``sitecustomize.py``/``.pth``
files and pytest plugins, a fork bomb, a memory bomb, a disk bomb, huge output, a hung
command, a background process rewriting files, ``kill 1``) live in the test module, as a
table that later attacks extend by appending rows.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.frontends.reference_participants.base import (
    Incoming,
    ReferenceParticipant,
    Reply,
    TurnStyle,
)
from orchestrator.participant.serving import CardInfo
from orchestrator.tools.tool_protocol import ToolCall, ToolResult


class Step(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    command: str
    timeout: int | None = None


class Plan(BaseModel):
    model_config = ConfigDict(extra="forbid")

    steps: list[Step] = Field(default_factory=list)
    answer_text: str = "done"
    # a patch in the answer's data part; None: the green agent takes the container's diff
    answer_patch: str | None = None
    # this many bytes of padding appended to the answer's text (an oversized answer)
    answer_bytes: int = 0


class HostileParticipant(ReferenceParticipant):
    def __init__(self, plans: dict[str, Plan], turn_style: TurnStyle = "message") -> None:
        super().__init__()
        self.plans = plans
        self.turn_style = turn_style
        self.info = CardInfo(
            name="hostile-participant",
            description="Tries to read hidden history, plant test hooks and exhaust resources.",
        )
        # instance id -> step name -> the tool result it got
        self.results: dict[str, dict[str, ToolResult]] = {}

    def new_state(self) -> dict[str, Any]:
        return {"instance": None, "plan": None, "next": 0}

    def result(self, instance_id: str, step: str) -> ToolResult:
        """The tool result of ``step`` on ``instance_id`` (KeyError if it never came back)."""
        return self.results[instance_id][step]

    async def respond(self, state: dict[str, Any], incoming: Incoming) -> Reply:
        if incoming.spec is not None:
            instance_id = str(incoming.spec.get("instance_id", ""))
            state["instance"] = instance_id
            state["plan"] = self.plans.get(instance_id) or self.plans.get("*") or Plan()
            self.results.setdefault(instance_id, {})
        plan: Plan = state["plan"]
        if plan is None:
            return Reply.answer("no task")
        seen = self.results[state["instance"]]
        for result in incoming.results:
            seen[result.id] = result
        index = state["next"]
        state["next"] += 1
        if index < len(plan.steps):
            step = plan.steps[index]
            arguments: dict[str, Any] = {"command": step.command}
            if step.timeout is not None:
                arguments["timeout"] = step.timeout
            return Reply.calls([ToolCall(id=step.name, name="bash", arguments=arguments)])
        text = plan.answer_text + ("x" * plan.answer_bytes if plan.answer_bytes else "")
        return Reply.answer(text, plan.answer_patch)
