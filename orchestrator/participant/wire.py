"""The ``swe-sandbox`` v1 wire format, as pure functions.

Shared by the green agent's client (:mod:`orchestrator.participant.client`) and the reference
participants. A message is seen here as a list of :data:`WirePart`: ``("text", str)`` or
``("data", value)``, in the order of the A2A parts. The protocol is described for participant
authors in ``docs/protocol.md``.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, Field

from orchestrator.models import Instance
from orchestrator.tools.tool_protocol import ToolCall, ToolResult
from sandbox_tools.contract import TESTBED

PROTOCOL = "swe-sandbox"
VERSION = 1

WirePart = tuple[Literal["text", "data"], Any]

_FENCE = re.compile(r"\A```[a-zA-Z]*\s*\n(.*)\n```\Z", re.DOTALL)


class WireLimits(BaseModel):
    """The limits announced to the participant (and enforced by the green agent)."""

    max_tool_calls: int
    tool_timeout: float
    instance_timeout: float
    reply_timeout: float


class ParsedTurn(BaseModel):
    """What one participant turn holds, in order.

    ``items`` are the tool calls to run and, in their place, error results for calls that
    could not be read (they go back to the participant unchanged). ``texts`` and ``data`` are
    the parts that are not tool calls.
    """

    items: list[ToolCall | ToolResult] = Field(default_factory=list)
    texts: list[str] = Field(default_factory=list)
    data: list[Any] = Field(default_factory=list)

    @property
    def is_final(self) -> bool:
        """A turn without tool calls (well-formed or not) is the participant's final answer."""
        return not self.items

    @property
    def text(self) -> str:
        return "\n".join(self.texts)

    def final_data(self) -> dict[str, Any] | None:
        """The answer's structured parts merged into one dict (``None`` when there are none)."""
        merged: dict[str, Any] = {}
        for value in self.data:
            if isinstance(value, dict):
                merged.update(value)
        return merged or None


# ------------------------------------------------------------------ the first message
def task_spec(instance: Instance, tools: list[dict[str, Any]], limits: WireLimits) -> dict:
    """The data part of the first message: everything a program needs to start."""
    return {
        "protocol": PROTOCOL,
        "version": VERSION,
        "instance_id": instance.instance_id,
        "repo": instance.repo,
        "workdir": TESTBED,
        "tools": tools,
        "limits": limits.model_dump(),
    }


def task_text(instance: Instance, tools: list[dict[str, Any]], limits: WireLimits) -> str:
    """The readable text of the first message: the issue, the hints, how to work and finish."""
    tool_lines = "\n".join(f"- {t['name']}: {_first_sentence(t.get('description'))}" for t in tools)
    hints = instance.hints_text.strip()
    hints_block = f"\n## Hints\n\n{hints}\n" if hints else ""
    example = json.dumps(
        {"type": "tool_call", "id": "call-1", "name": "bash", "arguments": {"command": "ls"}}
    )
    return f"""\
# Task: resolve an issue in {instance.repo} ({instance.instance_id})

The repository is checked out at {TESTBED} in a sandbox container (no network). Change the
source code so that the issue below is resolved. Do not change the tests; hidden tests will
check your change.

## Issue

{instance.problem_statement.strip()}
{hints_block}
## How to work (protocol {PROTOCOL} v{VERSION})

Use the tools by answering with tool calls, each a data part (or your whole message text) of
the form
{example}
Several calls in one answer (a JSON list as text, or several data parts) run in order. You
get back one message with a data part {{"type": "tool_result", "id", "output", "exit_code",
"error", "truncated", "timed_out", "duration"}} per call, in the same order. End your turn
normally (a completed message or task) or as a task in input-required: both work. The
tools (JSON schemas in the data part of this message):
{tool_lines}

## How to finish

Answer without any tool call. Either include a unified diff of your change (a data part
{{"patch": "<diff>"}}, <patch>...</patch> tags, a ```diff block, or a bare diff), or just say
"done" after editing the files with the tools: the change is then taken from `git diff` of
{TESTBED} (new files included).

## Limits

- tool calls: at most {limits.max_tool_calls} in total;
- time per tool call: {limits.tool_timeout:g} s;
- time in total: {limits.instance_timeout:g} s;
- time for each of your answers: {limits.reply_timeout:g} s.

When a limit is reached you get a message saying so, and the work ends.
"""


def _first_sentence(description: object) -> str:
    text = " ".join(str(description or "").split())
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


def read_task_spec(parts: list[WirePart]) -> dict[str, Any] | None:
    """The ``swe-sandbox`` task spec among ``parts`` (for participants), else ``None``."""
    for kind, value in parts:
        if kind == "data" and isinstance(value, dict) and value.get("protocol") == PROTOCOL:
            return value
    return None


# ------------------------------------------------------------------ tool calls and results
def whole_numbers(value: Any) -> Any:
    """Floats that are whole numbers as ints, recursively (A2A data parts turn ints to floats)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [whole_numbers(v) for v in value]
    return value


def tool_call_wire(call: ToolCall) -> dict[str, Any]:
    return {"type": "tool_call", **call.model_dump()}


def parse_turn(parts: list[WirePart]) -> ParsedTurn:
    """Split a participant's turn into tool calls (in order) and everything else."""
    turn = ParsedTurn()
    for kind, value in parts:
        if kind == "text":
            _parse_text(value, turn)
        else:
            _parse_data(value, turn)
    return turn


def parse_tool_results(parts: list[WirePart]) -> list[ToolResult]:
    """The tool results in a green agent's reply (for participants), in order."""
    results = []
    for kind, value in parts:
        if kind != "data":
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, dict) and item.get("type") == "tool_result":
                fields = {k: v for k, v in whole_numbers(item).items() if k != "type"}
                fields["id"] = str(fields.get("id", ""))
                results.append(ToolResult.model_validate(fields))
    return results


def _parse_text(text: str, turn: ParsedTurn) -> None:
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body.startswith(("{", "[")):
        turn.texts.append(text)
        return
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        if '"tool_call"' in body:
            turn.items.append(
                _error(
                    "",
                    f"Your message looks like a tool call but is not valid JSON ({exc}). "
                    "Send the call again as one JSON object, or a JSON list of them.",
                )
            )
        else:
            turn.texts.append(text)
        return
    if _has_tool_call(value):
        _parse_data(value, turn)
    else:
        turn.texts.append(text)


def _has_tool_call(value: Any) -> bool:
    items = value if isinstance(value, list) else [value]
    return any(isinstance(i, dict) and i.get("type") == "tool_call" for i in items)


def _parse_data(value: Any, turn: ParsedTurn) -> None:
    if isinstance(value, list) and _has_tool_call(value):
        for item in value:
            if isinstance(item, dict) and item.get("type") == "tool_call":
                turn.items.append(_read_call(item))
            else:
                turn.items.append(_error("", f"Not a tool call inside a list of calls: {item!r}"))
    elif isinstance(value, dict) and value.get("type") == "tool_call":
        turn.items.append(_read_call(value))
    else:
        turn.data.append(value)


def _read_call(item: dict[str, Any]) -> ToolCall | ToolResult:
    raw_id = item.get("id")
    if isinstance(raw_id, float) and raw_id.is_integer():
        raw_id = int(raw_id)
    call_id = str(raw_id) if isinstance(raw_id, str | int) and str(raw_id) else ""
    if not call_id:
        return _error("", 'A tool call needs an "id" (a string) to match its result.')
    name = item.get("name")
    if not isinstance(name, str) or not name:
        return _error(call_id, 'A tool call needs a "name": the name of one of the tools.')
    arguments = item.get("arguments", {})
    if arguments is None:
        arguments = {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return _error(call_id, f'"arguments" is a string that is not valid JSON ({exc}).')
    if not isinstance(arguments, dict):
        return _error(call_id, '"arguments" must be a JSON object of the tool\'s parameters.')
    return ToolCall(id=call_id, name=name, arguments=whole_numbers(arguments))


def _error(call_id: str, output: str) -> ToolResult:
    return ToolResult(id=call_id, output=output, error=True)
