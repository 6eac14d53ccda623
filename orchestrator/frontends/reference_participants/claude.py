"""A coding agent on the Anthropic Messages API that works through the swe-sandbox tools.

Each tool call of the model becomes one swe-sandbox tool call (same id); each tool result comes
back as a ``tool_result`` block. When the model answers without tool use, the participant
answers "done" (the green agent takes ``git diff``) with the model's summary in a data part.
The API key and base URL come from the options or the SDK's ``ANTHROPIC_API_KEY`` /
``ANTHROPIC_BASE_URL``; transient API errors are retried under the one Anthropic retry policy
(:mod:`orchestrator.anthropic_retry`).
"""

from __future__ import annotations

from typing import Any

from anthropic.types import Message

from orchestrator.anthropic_retry import ApiRetry, RetryPolicy, async_client
from orchestrator.frontends.reference_participants.base import (
    Incoming,
    ReferenceParticipant,
    Reply,
    TurnStyle,
)
from orchestrator.participant.serving import CardInfo
from orchestrator.participant.wire import whole_numbers
from orchestrator.tools.tool_protocol import ToolCall, ToolResult
from sandbox_tools.contract import TESTBED

SYSTEM_PROMPT = """\
You are an expert software engineer working autonomously in a sandbox container with no
network. The repository is checked out at {workdir}. Resolve the issue you are given by
changing the source code (not the tests), using the tools: explore the code, reproduce the
problem with a small script, edit the files, and run the relevant existing tests. Keep the
change minimal. When you are done, answer with a short summary of your change and no tool
call; your edits in {workdir} are taken as the result.
"""


class ClaudeParticipant(ReferenceParticipant):
    def __init__(
        self,
        *,
        model: str = "claude-sonnet-4-6",
        api_key: str | None = None,
        base_url: str | None = None,
        max_turns: int = 100,
        max_tokens: int = 8192,
        retry: RetryPolicy | None = None,
        turn_style: TurnStyle = "message",
    ) -> None:
        super().__init__()
        self.model = model
        self.max_turns = max_turns
        self.max_tokens = max_tokens
        self.turn_style = turn_style
        self.retry = retry or RetryPolicy()
        self.client = async_client(api_key, base_url)
        self.info = CardInfo(
            name="claude-participant",
            description=f"A coding agent ({model}) that resolves issues with swe-sandbox tools.",
        )

    def new_state(self) -> dict[str, Any]:
        return {"messages": [], "tools": [], "system": "", "pending": [], "turns": 0}

    async def respond(self, state: dict[str, Any], incoming: Incoming) -> Reply:
        if incoming.spec is not None:
            spec = whole_numbers(incoming.spec)
            state["system"] = SYSTEM_PROMPT.format(workdir=spec.get("workdir", TESTBED))
            state["tools"] = [
                {
                    "name": t["name"],
                    "description": t.get("description", ""),
                    "input_schema": t.get("input_schema", {"type": "object"}),
                }
                for t in spec.get("tools", [])
            ]
            state["messages"] = [{"role": "user", "content": incoming.text}]
        elif state["pending"]:
            if not incoming.results:
                # not an answer to our calls: the green agent ended the work
                return Reply.answer("stopped")
            state["messages"].append(
                {"role": "user", "content": _result_blocks(state["pending"], incoming.results)}
            )
        else:
            state["messages"].append({"role": "user", "content": incoming.text or "continue"})
        state["pending"] = []
        state["turns"] += 1
        if state["turns"] > self.max_turns:
            return Reply.answer("done", patch=None)

        async def create() -> Message:
            return await self.client.messages.create(
                model=self.model,
                max_tokens=self.max_tokens,
                system=state["system"],
                tools=state["tools"],
                messages=state["messages"],
            )

        response: Message = await ApiRetry(self.retry).async_retrying()(create)
        content = [_as_param(block.model_dump(exclude_none=True)) for block in response.content]
        state["messages"].append({"role": "assistant", "content": content})
        calls = [
            ToolCall(id=b["id"], name=b["name"], arguments=dict(b.get("input") or {}))
            for b in content
            if b["type"] == "tool_use"
        ]
        if calls:
            state["pending"] = [c.id for c in calls]
            return Reply.calls(calls)
        summary = "\n".join(b["text"] for b in content if b["type"] == "text").strip()
        return Reply(
            parts=[("text", "done"), ("data", {"type": "final", "summary": summary})], final=True
        )


# the fields of a response block that may be sent back in the conversation
_PARAM_FIELDS = {
    "text": ("type", "text"),
    "tool_use": ("type", "id", "name", "input"),
    "thinking": ("type", "thinking", "signature"),
    "redacted_thinking": ("type", "data"),
}


def _as_param(block: dict[str, Any]) -> dict[str, Any]:
    fields = _PARAM_FIELDS.get(block.get("type", ""))
    return {k: v for k, v in block.items() if fields is None or k in fields}


def _result_blocks(pending: list[str], results: list[ToolResult]) -> list[dict[str, Any]]:
    """One tool_result block per pending tool_use id, in order (a missing result says so)."""
    by_id = {r.id: r for r in results}
    blocks = []
    for call_id in pending:
        result = by_id.get(call_id)
        if result is None:
            blocks.append(
                {
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "content": "no result came back for this call",
                    "is_error": True,
                }
            )
            continue
        text = result.output
        if result.exit_code not in (None, 0):
            text += f"\n[exit code {result.exit_code}]"
        if result.timed_out:
            text += "\n[the command timed out]"
        blocks.append(
            {
                "type": "tool_result",
                "tool_use_id": call_id,
                "content": text or "(no output)",
                "is_error": result.error,
            }
        )
    return blocks
