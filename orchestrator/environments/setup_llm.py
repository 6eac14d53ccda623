"""The ``llm`` setup strategy: Claude builds the test environment in the sandbox with tool use.

The model reads the packaging files in ``/testbed``, picks an interpreter, creates a virtual
environment, installs the package with its test extras and calls ``finish``. This module then
writes ``/opt/swe/activate.sh`` (the environment contract: sourcing it activates the
environment and changes to ``/testbed``) and checks it before accepting the result.

Bounds: turns, total tokens and wall time from :class:`Settings`. Transient API errors are
retried by tenacity (the SDK's own retries are off); a refused key fails at once. Every turn,
tool call and token count goes to ``setup.log`` (JSON lines) and to structlog.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import anthropic
from pydantic import BaseModel, Field, ValidationError
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
    wait_random,
)

from orchestrator.errors import SandboxError, UserError
from orchestrator.log import get_logger
from orchestrator.models import Instance
from orchestrator.participant.tool_protocol import ToolCall, ToolResult
from orchestrator.participant.tools_host import install_tools, run_tool
from orchestrator.sandbox import Sandbox
from orchestrator.settings import Settings
from sandbox_tools.schemas import DEFAULT_TIMEOUT, TOOLS

VENV_PATH = "/opt/swe/venv"
ACTIVATE_PATH = "/opt/swe/activate.sh"
TESTBED = "/testbed"
LOG_NAME = "setup.log"
RESPONSE_MAX_TOKENS = 8192
API_TIMEOUT = 600.0
TOOL_TIMEOUT = 900.0
TOOL_OUTPUT_LIMIT = 30_000
LOG_FIELD_LIMIT = 4_000

FailureKind = Literal[
    "", "auth", "turn_limit", "token_limit", "timeout", "api_error", "gave_up", "sandbox"
]

# errors worth another attempt: rate limits, overload (529), 5xx, timeouts, dropped connections
TRANSIENT_ERRORS: tuple[type[Exception], ...] = (
    anthropic.RateLimitError,
    anthropic.APIConnectionError,
    anthropic.InternalServerError,
    anthropic.RequestTimeoutError,
    anthropic.ConflictError,
)
AUTH_ERRORS: tuple[type[Exception], ...] = (
    anthropic.AuthenticationError,
    anthropic.PermissionDeniedError,
)

FINISH_TOOL: dict[str, Any] = {
    "name": "finish",
    "description": (
        "Call once the environment works: the package imports and its tests run. The harness "
        "then writes /opt/swe/activate.sh (activates venv_path, exports env, cd /testbed) and "
        "checks it; if the check fails you get the reason back and can fix it."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "python_version": {
                "type": "string",
                "description": "Version of the venv's interpreter, e.g. 3.11 or 3.9.18.",
            },
            "venv_path": {
                "type": "string",
                "description": f"The virtual environment's directory (normally {VENV_PATH}).",
            },
            "test_command": {
                "type": "string",
                "description": "Command that runs the tests from /testbed with the venv active, "
                "e.g. `pytest -rA`; test files are appended to it.",
            },
            "install_commands": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Every command that built the environment, in order, so that "
                "running them in a fresh container reproduces it.",
            },
            "env": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": "Environment variables the tests need (exported by activate.sh).",
            },
            "notes": {"type": "string", "description": "Anything a person should know."},
        },
        "required": ["python_version", "venv_path", "test_command", "install_commands"],
    },
}

GIVE_UP_TOOL: dict[str, Any] = {
    "name": "give_up",
    "description": "Call when the environment cannot be built here; say why.",
    "input_schema": {
        "type": "object",
        "properties": {"reason": {"type": "string"}},
        "required": ["reason"],
    },
}

SYSTEM_PROMPT = f"""\
You set up the Python environment in which a repository's test suite will run. You work in a \
Debian container through tools. The repository is checked out at {TESTBED}; do not change its \
tracked files.

1. Read the packaging files (pyproject.toml, setup.py, setup.cfg, tox.ini, requirements*.txt, \
CI configuration) to find which Python versions the project supports at this commit and what \
its tests need.
2. Choose an interpreter. The container has no internet access except the Python Package \
Index: `uv python install` and pyenv downloads fail, so use an interpreter already in the \
container (listed in the first message), the newest one the project supports.
3. Create a virtual environment at {VENV_PATH} with it (`python3 -m venv {VENV_PATH}` or \
`uv venv`).
4. Install pip, setuptools and wheel, then the package in editable mode with its test extras \
(e.g. `{VENV_PATH}/bin/pip install -e ".[test]"`), plus whatever else the tests need (pytest, \
test requirements files). When the newest release of a dependency breaks this old code, pin \
a version from the time of the commit.
5. Check that the tests are collected and run (a few quick test files are enough).
6. Call `finish`. If the environment cannot be built, call `give_up` with the reason.

The bash tool keeps the working directory and exported variables between calls, but write \
install commands with absolute paths (such as {VENV_PATH}/bin/pip) so that they replay in a \
fresh shell. Long installs may need a larger `timeout` argument. Keep output short (-q, tail). \
Do not write {ACTIVATE_PATH} yourself; `finish` writes it."""

NUDGE = "Continue with the tools. Call finish when the environment works, or give_up."


class SetupFacts(BaseModel):
    """What the agent is told about the checkout in /testbed."""

    repo: str
    version: str = ""
    instance_id: str = ""
    environment_setup_commit: str = ""

    @classmethod
    def from_instance(cls, instance: Instance) -> SetupFacts:
        return cls(
            repo=instance.repo,
            version=instance.version,
            instance_id=instance.instance_id,
            environment_setup_commit=instance.environment_setup_commit,
        )


class FinishArgs(BaseModel):
    """The arguments of the ``finish`` tool."""

    python_version: str
    venv_path: str = VENV_PATH
    test_command: str
    install_commands: list[str]
    env: dict[str, str] = Field(default_factory=dict)
    notes: str = ""


class FinishCheck(BaseModel):
    """The harness's verdict on a ``finish`` call; ``message`` goes back to the model."""

    ok: bool
    python_version: str = ""
    message: str = ""


class AgentLimits(BaseModel):
    max_turns: int
    max_tokens: int
    wall_time: float
    tool_timeout: float = TOOL_TIMEOUT

    @classmethod
    def from_settings(cls, settings: Settings, tool_timeout: float = TOOL_TIMEOUT) -> AgentLimits:
        return cls(
            max_turns=settings.setup_max_turns,
            max_tokens=settings.setup_max_tokens,
            wall_time=settings.setup_timeout,
            tool_timeout=tool_timeout,
        )


class RetryPolicy(BaseModel):
    """Backoff for transient API errors: exponential from ``initial_wait`` up to ``max_wait``."""

    attempts: int = 8
    initial_wait: float = 2.0
    max_wait: float = 60.0


class LlmSetupResult(BaseModel):
    success: bool
    python_version: str = ""
    venv_path: str = ""
    test_command: str = ""
    install_commands: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    notes: str = ""
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    duration: float = 0.0
    failure_kind: FailureKind = ""
    failure_reason: str = ""
    log_path: Path | None = None

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def key(self) -> str:
        """A stable digest of what defines the built environment (for the environment cache)."""
        facts = {
            "strategy": "llm",
            "python_version": self.python_version,
            "venv_path": self.venv_path,
            "install_commands": self.install_commands,
            "env": self.env,
        }
        return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]


# ------------------------------------------------------------------------- settings


def llm_available(settings: Settings) -> bool:
    """Whether the llm strategy can run (an API key is configured)."""
    return bool(settings.anthropic_key())


def check_llm_settings(settings: Settings) -> None:
    """Raise :class:`UserError` when strategy ``llm`` is chosen but cannot run.

    Call it before any container starts. Strategy ``auto`` without a key is fine: it simply
    never falls back to the agent.
    """
    if settings.setup_strategy == "llm" and not llm_available(settings):
        raise _no_key()
    for name in ("setup_max_turns", "setup_max_tokens", "setup_timeout"):
        if getattr(settings, name) <= 0:
            raise UserError(
                f"{name} is {getattr(settings, name)}; the setup agent needs a positive limit.",
                f"set SWE_GREEN_{name.upper()} to a positive number.",
            )


def _no_key() -> UserError:
    return UserError(
        "The llm setup strategy needs an Anthropic API key, and none is set.",
        "set SWE_GREEN_ANTHROPIC_API_KEY (or ANTHROPIC_API_KEY), "
        "or use the recipe strategy (SWE_GREEN_SETUP_STRATEGY=recipe).",
    )


def make_client(settings: Settings) -> anthropic.Anthropic:
    """The SDK client, with the SDK's own retries off (tenacity retries instead)."""
    key = settings.anthropic_key()
    if not key:
        raise _no_key()
    return anthropic.Anthropic(
        api_key=key, base_url=settings.anthropic_base_url, max_retries=0, timeout=API_TIMEOUT
    )


# ------------------------------------------------------------------------- log


def _cap(text: str, limit: int = LOG_FIELD_LIMIT) -> str:
    return text if len(text) <= limit else f"{text[:limit]}[... {len(text) - limit} more chars]"


def _cap_values(value: Any, limit: int = LOG_FIELD_LIMIT) -> Any:
    if isinstance(value, str):
        return _cap(value, limit)
    if isinstance(value, dict):
        return {k: _cap_values(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_cap_values(v, limit) for v in value]
    return value


_QUIET_EVENTS = {"turn", "tool_call"}  # every turn: debug level on the console


class SetupLog:
    """``setup.log``: one JSON object per line with ``ts`` and ``event``; echoed to structlog."""

    def __init__(self, log_dir: Path, **bound: object) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        self.path = log_dir / LOG_NAME
        self._file = self.path.open("a", encoding="utf-8")
        self._logger = get_logger(component="setup_llm", **bound)

    def write(self, event: str, **fields: Any) -> None:
        record = {"ts": datetime.now(UTC).isoformat(), "event": event, **_cap_values(fields)}
        self._file.write(json.dumps(record, default=str) + "\n")
        self._file.flush()
        summary = {
            k: _cap(v, 200) if isinstance(v, str) else v
            for k, v in fields.items()
            if not isinstance(v, list | dict) and k not in ("prompt", "output", "text")
        }
        level = "debug" if event in _QUIET_EVENTS else "info"
        getattr(self._logger, level)(f"setup_llm.{event}", **summary)

    def close(self) -> None:
        self._file.close()


# ------------------------------------------------------------------------- the loop


class _Stop(Exception):
    def __init__(self, kind: FailureKind, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


def _retry_after(exc: BaseException | None) -> float:
    """The server's ``retry-after`` hint in seconds, or 0."""
    response = getattr(exc, "response", None)
    if response is None:
        return 0.0
    try:
        return max(0.0, float(response.headers.get("retry-after", 0)))
    except (TypeError, ValueError):
        return 0.0


def _describe(exc: BaseException) -> str:
    if isinstance(exc, anthropic.APIStatusError):
        body = exc.body if isinstance(exc.body, dict) else {}
        error = body.get("error") if isinstance(body.get("error"), dict) else {}
        detail = error.get("message") or str(exc)
        return f"HTTP {exc.status_code} {error.get('type', type(exc).__name__)}: {detail}"
    return f"{type(exc).__name__}: {exc}"


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
        except _Stop as stop:
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
                    raise _Stop("gave_up", f"the setup agent gave up: {reason}")
                else:
                    results.append(self._tool(use, deadline))
            messages.append({"role": "user", "content": results})

    def _check_budget(self, deadline: float) -> None:
        limits = self.limits
        if self.turns >= limits.max_turns:
            raise _Stop(
                "turn_limit",
                f"reached the turn limit ({limits.max_turns} turns) without the setup agent "
                "calling finish",
            )
        if self.input_tokens + self.output_tokens >= limits.max_tokens:
            raise _Stop(
                "token_limit",
                f"used {self.input_tokens + self.output_tokens} tokens, over the token limit "
                f"({limits.max_tokens}), without the setup agent calling finish",
            )
        if time.monotonic() >= deadline:
            raise _Stop(
                "timeout",
                f"ran out of wall time ({limits.wall_time:.0f} s) without the setup agent "
                "calling finish",
            )

    def _create(self, messages: list[dict[str, Any]], deadline: float) -> Any:
        """One Messages API call, retried on transient errors while the deadline allows."""
        backoff = wait_exponential(
            multiplier=self.retry.initial_wait, max=self.retry.max_wait
        ) + wait_random(0, self.retry.initial_wait)

        def wait(state: RetryCallState) -> float:
            hinted = _retry_after(state.outcome.exception() if state.outcome else None)
            return min(max(backoff(state), hinted), self.retry.max_wait)

        out_of_time = False

        def past_deadline(state: RetryCallState) -> bool:
            nonlocal out_of_time
            sleep = getattr(state, "upcoming_sleep", 0.0) or 0.0
            out_of_time = time.monotonic() + sleep >= deadline
            return out_of_time

        def log_retry(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            self.log.write(
                "api_retry",
                turn=self.turns + 1,
                attempt=state.attempt_number,
                wait=round(getattr(state, "upcoming_sleep", 0.0) or 0.0, 3),
                error=_describe(exc) if exc else "",
            )

        def attempt() -> Any:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _Stop("timeout", self._timeout_reason("waiting for the API"))
            return self.client.messages.create(
                model=self.model,
                max_tokens=RESPONSE_MAX_TOKENS,
                system=SYSTEM_PROMPT,
                tools=self.tools,  # type: ignore[arg-type]
                messages=messages,  # type: ignore[arg-type]
                timeout=min(API_TIMEOUT, remaining),
            )

        retrying = Retrying(
            retry=retry_if_exception_type(TRANSIENT_ERRORS),
            wait=wait,
            stop=stop_after_attempt(self.retry.attempts) | past_deadline,
            before_sleep=log_retry,
            reraise=True,
        )
        try:
            return retrying(attempt)
        except AUTH_ERRORS as exc:
            self.log.write("api_error", turn=self.turns + 1, error=_describe(exc), retried=False)
            raise _Stop(
                "auth",
                f"the Anthropic API refused the API key ({_describe(exc)}); check "
                "SWE_GREEN_ANTHROPIC_API_KEY / ANTHROPIC_API_KEY",
            ) from exc
        except TRANSIENT_ERRORS as exc:
            self.log.write("api_error", turn=self.turns + 1, error=_describe(exc), retried=True)
            if out_of_time:
                raise _Stop("timeout", self._timeout_reason(_describe(exc))) from exc
            raise _Stop(
                "api_error",
                f"the Anthropic API kept failing ({_describe(exc)}), "
                f"gave up after {retrying.statistics.get('attempt_number', '?')} attempts",
            ) from exc
        except anthropic.APIError as exc:
            self.log.write("api_error", turn=self.turns + 1, error=_describe(exc), retried=False)
            raise _Stop(
                "api_error", f"the Anthropic API rejected a request: {_describe(exc)}"
            ) from exc

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
            raise _Stop("timeout", self._timeout_reason(f"before running {call.name}"))
        try:
            result = self.execute(call, min(self.limits.tool_timeout, remaining))
        except SandboxError as exc:
            self.log.write("tool_call", turn=self.turns, id=call.id, name=call.name, error=str(exc))
            raise _Stop("sandbox", f"the sandbox failed during {call.name}: {exc}") from exc
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
            raise _Stop("sandbox", f"the sandbox failed while checking finish: {exc}") from exc
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


# ------------------------------------------------------------------------- the sandbox side


def activate_script(venv_path: str, env: dict[str, str]) -> str:
    """The text of ``/opt/swe/activate.sh``."""
    lines = [
        "# written by swe-green (setup strategy llm); source it with bash",
        f"source {shlex.quote(venv_path.rstrip('/') + '/bin/activate')}",
        *(f"export {name}={shlex.quote(value)}" for name, value in sorted(env.items())),
        f"cd {TESTBED}",
    ]
    return "\n".join(lines) + "\n"


_VERIFY = (
    "set -e; realpath -e {venv}; source {activate}; "
    "python -c 'import os, platform, sys; print(platform.python_version()); "
    "print(os.path.realpath(sys.prefix))'; pwd -P"
)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _same_minor(claimed: str, actual: str) -> bool:
    want = re.match(r"\s*(\d+)\.(\d+)", claimed)
    have = re.match(r"(\d+)\.(\d+)", actual)
    return bool(want and have and want.groups() == have.groups())


def install_activate_script(sandbox: Sandbox, args: FinishArgs) -> FinishCheck:
    """Write ``/opt/swe/activate.sh`` for ``args`` and check that sourcing it works."""
    bad = [name for name in args.env if not _ENV_NAME.match(name)]
    if bad:
        return FinishCheck(ok=False, message=f"not valid variable names in env: {bad}")
    venv = args.venv_path.rstrip("/") or "/"
    probe = sandbox.exec(f"test -f {shlex.quote(venv)}/bin/activate", timeout=30)
    if not probe.ok:
        return FinishCheck(ok=False, message=f"{venv}/bin/activate does not exist")
    sandbox.write_file(ACTIVATE_PATH, activate_script(venv, args.env), mode=0o755)
    check = sandbox.exec(_VERIFY.format(venv=shlex.quote(venv), activate=ACTIVATE_PATH), timeout=60)
    lines = check.stdout.split()
    if not check.ok or len(lines) != 4:
        return FinishCheck(
            ok=False,
            message=f"`source {ACTIVATE_PATH} && python` failed (exit {check.exit_code}): "
            f"{_cap(check.output, 2000)}",
        )
    venv_real, version, prefix, cwd = lines
    if prefix != venv_real:
        return FinishCheck(
            ok=False,
            message=f"after activation `python` runs from {prefix}, not from {venv_real}",
        )
    if cwd != TESTBED:
        return FinishCheck(ok=False, message=f"activate.sh left the shell in {cwd}")
    if not _same_minor(args.python_version, version):
        return FinishCheck(
            ok=False,
            message=f"python_version says {args.python_version!r} but the venv runs {version}",
        )
    return FinishCheck(ok=True, python_version=version)


_PROBE = """\
echo '## interpreters'
for p in $(compgen -c | grep -E '^python3(\\.[0-9]+)?$' | sort -u); do
  echo "$(command -v "$p"): $("$p" --version 2>&1)"
done
echo '## uv'; uv --version 2>&1 || true
echo '## /testbed'; ls -A /testbed
"""


def first_message(facts: SetupFacts, probe: str) -> str:
    """The opening user message: the instance facts and what the container offers."""
    return (
        f"Repository: {facts.repo}\n"
        f"Version: {facts.version or 'unknown'}\n"
        f"Instance: {facts.instance_id or 'unknown'}\n"
        f"Checked out commit: {facts.environment_setup_commit or 'unknown'} (in {TESTBED})\n\n"
        f"What the container has:\n{probe.strip()}\n\n"
        f"Set up the environment at {VENV_PATH} and call finish."
    )


def run_llm_setup(
    sandbox: Sandbox,
    facts: SetupFacts,
    settings: Settings,
    log_dir: Path,
    *,
    client: anthropic.Anthropic | None = None,
    retry: RetryPolicy | None = None,
    tool_timeout: float = TOOL_TIMEOUT,
) -> LlmSetupResult:
    """Let the setup agent build the environment in ``sandbox`` (network on, /testbed ready).

    Never raises for the agent's or the API's failures: they come back as ``success=False``
    with ``failure_kind`` (``auth`` means every later call would fail the same way).
    """
    log = SetupLog(log_dir, instance_id=facts.instance_id, repo=facts.repo)
    try:
        try:
            install_tools(sandbox)
            probe = sandbox.exec(_PROBE, timeout=60).output
        except SandboxError as exc:
            log.write("sandbox_error", error=str(exc))
            return LlmSetupResult(
                success=False,
                failure_kind="sandbox",
                failure_reason=f"could not prepare the sandbox for the setup agent: {exc}",
                log_path=log.path,
            )
        agent = SetupAgent(
            client or make_client(settings),
            model=settings.setup_model,
            tools=list(TOOLS),
            execute=lambda call, cap: run_tool(
                sandbox,
                call,
                timeout=min(DEFAULT_TIMEOUT, cap),
                max_timeout=cap,
                output_limit=TOOL_OUTPUT_LIMIT,
            ),
            complete=lambda args: install_activate_script(sandbox, args),
            limits=AgentLimits.from_settings(settings, tool_timeout),
            log=log,
            retry=retry,
        )
        return agent.run(first_message(facts, _cap(probe)))
    finally:
        log.close()
