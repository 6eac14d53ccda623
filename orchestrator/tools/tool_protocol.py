"""Tool calls and their results: the data shared by the setup agent and the participant protocol.

The tools themselves (their schemas and the code that runs inside the container) live in
``sandbox_tools``; ``orchestrator.tools.tools_host.run_tool`` runs one call in a sandbox.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ToolCall(BaseModel):
    """``{"type": "tool_call", "id", "name", "arguments"}`` on the wire."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolResult(BaseModel):
    """``{"type": "tool_result", "id", "output", "exit_code", ...}`` on the wire.

    ``error`` is true when the call itself was wrong or failed (unknown tool, bad arguments,
    timeout, no match for a replace); ``output`` then says why, in words a model can act on.
    """

    id: str
    output: str
    exit_code: int | None = None
    error: bool = False
    truncated: bool = False
    timed_out: bool = False
    duration: float = 0.0

    def wire(self) -> dict[str, Any]:
        return {"type": "tool_result", **self.model_dump()}
