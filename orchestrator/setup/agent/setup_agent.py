"""The setup agent's tool-use loop, independent of any container (see :mod:`.setup_llm`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anthropic
from pydantic import ValidationError

from orchestrator.anthropic_retry import RetryPolicy
from orchestrator.errors import SandboxError
from orchestrator.setup.agent.setup_api import (
    MessagesRequest,
    SetupStop,
    create_message,
)
from orchestrator.setup.agent.setup_log import SetupLog
from orchestrator.setup.agent.setup_models import (
    FINISH_TOOL,
    GIVE_UP_TOOL,
    NUDGE,
    AgentLimits,
    FinishArgs,
    FinishCheck,
    LlmSetupResult,
)
from orchestrator.tools.tool_protocol import ToolCall, ToolResult


class SetupAgent:
    """The tool-use loop, independent of any container.

    ``execute(call, cap)`` runs a sandbox tool for at most ``cap`` seconds;
    ``complete(args)`` installs and checks the environment that ``finish`` describes.
    """

    def __init__(
        self,
        client: anthropic.Anthropic,
        *,
        model: str,
        tools: list[dict[str, Any]],
        execute: Callable[[ToolCall, float], ToolResult],
        complete: Callable[[FinishArgs], FinishCheck],
        limits: AgentLimits,
        log: SetupLog,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.client = client
        self.model = model
        self.tools = [*tools, FINISH_TOOL, GIVE_UP_TOOL]
        self.execute = execute
        self.complete = complete
        self.limits = limits
        self.log = log
        self.retry = retry or RetryPolicy()
        self.turns = 0
        self.input_tokens = 0
        self.output_tokens = 0

    def run(self, prompt: str) -> LlmSetupResult:
        started = time.monotonic()
        deadline = started + self.limits.wall_time
        self.log.write("start", model=self.model, limits=self.limits.model_dump(), prompt=prompt)
        try:
            result = self._loop(prompt, deadline)
        except SetupStop as stop:
            result = LlmSetupResult(
                success=False, failure_kind=stop.kind, failure_reason=stop.reason
            )
        result = result.model_copy(
            update={
                "turns": self.turns,
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "duration": round(time.monotonic() - started, 3),
                "log_path": self.log.path,
            }
        )
        self.log.write("result", **result.model_dump(mode="json"))
        return result

    def _loop(self, prompt: str, deadline: float) -> LlmSetupResult:
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        while True:
            self._check_budget(deadline)
            response = self._create(messages, deadline)
            self.turns += 1
            self._account(response)
            blocks = _blocks(response.content)
            messages.append({"role": "assistant", "content": blocks})
            uses = [b for b in blocks if b["type"] == "tool_use"]
            if not uses:
                messages.append({"role": "user", "content": NUDGE})
                continue
            results: list[dict[str, Any]] = []
            for use in uses:
                if use["name"] == "finish":
                    outcome = self._finish(use)
                    if isinstance(outcome, LlmSetupResult):
                        return outcome
                    results.append(outcome)
                elif use["name"] == "give_up":
                    reason = str(use["input"].get("reason", "")) or "no reason given"
                    raise SetupStop("gave_up", f"the setup agent gave up: {reason}")
                else:
                    results.append(self._tool(use, deadline))
            messages.append({"role": "user", "content": results})

    def _check_budget(self, deadline: float) -> None:
        limits = self.limits
        if self.turns >= limits.max_turns:
            raise SetupStop(
                "turn_limit",
                f"reached the turn limit ({limits.max_turns} turns) without the setup agent "
                "calling finish",
            )
        if self.input_tokens + self.output_tokens >= limits.max_tokens:
            raise SetupStop(
                "token_limit",
                f"used {self.input_tokens + self.output_tokens} tokens, over the token limit "
                f"({limits.max_tokens}), without the setup agent calling finish",
            )
        if time.monotonic() >= deadline:
            raise SetupStop(
                "timeout",
                f"ran out of wall time ({limits.wall_time:.0f} s) without the setup agent "
                "calling finish",
            )

    def _create(self, messages: list[dict[str, Any]], deadline: float) -> Any:
        """One Messages API call, retried on transient errors while the deadline allows."""
        request = MessagesRequest(
            model=self.model, tools=self.tools, messages=messages, deadline=deadline,
            wall_time=self.limits.wall_time, turn=self.turns + 1,
        )  # fmt: skip
        return create_message(self.client, request, self.retry, self.log)

    def _timeout_reason(self, detail: str) -> str:
        return f"ran out of wall time ({self.limits.wall_time:.0f} s): {detail}"

    def _account(self, response: Any) -> None:
        usage = response.usage
        read = getattr(usage, "cache_read_input_tokens", None) or 0
        created = getattr(usage, "cache_creation_input_tokens", None) or 0
        turn_in = (usage.input_tokens or 0) + read + created
        turn_out = usage.output_tokens or 0
        self.input_tokens += turn_in
        self.output_tokens += turn_out
        texts = [b.text for b in response.content if b.type == "text"]
        self.log.write(
            "turn",
            turn=self.turns,
            stop_reason=response.stop_reason,
            input_tokens=turn_in,
            output_tokens=turn_out,
            total_input_tokens=self.input_tokens,
            total_output_tokens=self.output_tokens,
            text="\n".join(texts),
            tool_calls=[b.name for b in response.content if b.type == "tool_use"],
        )

    def _tool(self, use: dict[str, Any], deadline: float) -> dict[str, Any]:
        remaining = deadline - time.monotonic()
        call = ToolCall(id=use["id"], name=use["name"], arguments=use["input"] or {})
        if remaining <= 0:
            raise SetupStop("timeout", self._timeout_reason(f"before running {call.name}"))
        try:
            result = self.execute(call, min(self.limits.tool_timeout, remaining))
        except SandboxError as exc:
            self.log.write("tool_call", turn=self.turns, id=call.id, name=call.name, error=str(exc))
            raise SetupStop("sandbox", f"the sandbox failed during {call.name}: {exc}") from exc
        self.log.write(
            "tool_call",
            turn=self.turns,
            id=call.id,
            name=call.name,
            arguments=call.arguments,
            exit_code=result.exit_code,
            error=result.error,
            timed_out=result.timed_out,
            truncated=result.truncated,
            duration=round(result.duration, 3),
            output=result.output,
        )
        return {
            "type": "tool_result",
            "tool_use_id": call.id,
            "content": render_tool_result(result),
            "is_error": result.error or result.timed_out,
        }

    def _finish(self, use: dict[str, Any]) -> LlmSetupResult | dict[str, Any]:
        """The result when ``finish`` is accepted, else the tool_result telling the model why."""
        try:
            args = FinishArgs.model_validate(use["input"] or {})
            check = self.complete(args)
        except ValidationError as exc:
            check = FinishCheck(ok=False, message=f"invalid finish arguments: {exc}")
        except SandboxError as exc:
            raise SetupStop("sandbox", f"the sandbox failed while checking finish: {exc}") from exc
        self.log.write(
            "finish", turn=self.turns, arguments=use["input"], ok=check.ok, message=check.message
        )
        if not check.ok:
            return {
                "type": "tool_result",
                "tool_use_id": use["id"],
                "content": f"finish rejected: {check.message}",
                "is_error": True,
            }
        return LlmSetupResult(
            success=True,
            python_version=check.python_version,
            venv_path=args.venv_path,
            test_command=args.test_command,
            install_commands=args.install_commands,
            env=args.env,
            notes=args.notes,
        )


def _blocks(content: list[Any]) -> list[dict[str, Any]]:
    """The response's content blocks as request params (text and tool_use only)."""
    out: list[dict[str, Any]] = []
    for block in content:
        if block.type == "text":
            out.append({"type": "text", "text": block.text})
        elif block.type == "tool_use":
            out.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
            )
    return out


def render_tool_result(result: ToolResult) -> str:
    """What the model reads for one tool call: the output, then a non-zero exit code."""
    text = result.output if result.output.strip() else "(no output)"
    if result.exit_code not in (0, None) and not (result.error or result.timed_out):
        text += f"\n[exit code {result.exit_code}]"
    return text
