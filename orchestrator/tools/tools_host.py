"""Running sandbox tool calls in a container, from the host.

``run_tool`` checks a call against the tool schemas, then runs it in the sandbox:

- ``bash`` is one ``docker exec`` of ``bash -c <fixed wrapper> swe-bash <command>``: the
  command is an argv element, never pasted into a shell line, and no Python starts;
- ``view``, ``edit`` and ``search`` are served by ``/opt/swe/tools.py`` running as a small
  server inside the container (started by the first such call, with the container's system
  Python; ``install_tools`` copies the program in once per sandbox handle): a call is one
  ``docker exec`` of a few lines of bash (``sandbox_tools.tools.CLIENT``) that hand the
  request, one argv element, to the server over the container's loopback, so no Python
  interpreter starts per call. The server's port is derived from the program's bytes, so a
  changed program gets its own server.

Requests too large for an argv element (over 64 KB) go through a file written with
``Sandbox.write_file``. Everything a caller (model or participant) can get wrong comes back as a
``ToolResult`` with ``error=True``; only infrastructure failures (the container or the Docker
daemon gone) raise ``SandboxError``.
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
import weakref
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from orchestrator.errors import SandboxError
from orchestrator.sandbox import DiskLimitExceeded, ExecResult, Sandbox
from orchestrator.tools.tool_protocol import ToolCall, ToolResult
from sandbox_tools import contract
from sandbox_tools import tools as tools_program
from sandbox_tools.contract import CONTRACT_PATH, REQUEST_DIR, TOOLS_PATH
from sandbox_tools.schemas import DEFAULT_TIMEOUT, ArgumentError, validate_arguments
from sandbox_tools.tools import BASH_WRAPPER, CLIENT
from sandbox_tools.tools import cap_middle as cap_output

ARGV_LIMIT = 64 * 1024
# the in-container `search` stops by itself this long before the call's time limit
_SEARCH_MARGIN = 2.0

# the sandboxes the program was copied into, by handle: a mark goes with its sandbox's handle,
# so a long-lived process (``serve``) keeps none for the containers of finished instances
_installed: weakref.WeakSet[Sandbox] = weakref.WeakSet()
_installed_lock = threading.Lock()


@cache
def tools_source() -> bytes:
    """The bytes of ``sandbox_tools/tools.py``, as copied into containers."""
    return Path(tools_program.__file__).read_bytes()


@cache
def contract_source() -> bytes:
    """The bytes of ``sandbox_tools/contract.py``, copied beside the tools program."""
    return Path(contract.__file__).read_bytes()


@cache
def server_port() -> int:
    """The in-container tool server's port on 127.0.0.1, from the program's bytes: 20000 to
    31999, below Linux's ephemeral range (32768-60999), so no outgoing connection holds it."""
    return 20000 + int(hashlib.sha256(tools_source()).hexdigest()[:8], 16) % 12000


def install_tools(sandbox: Sandbox, *, force: bool = False) -> None:
    """Copy the tools program into the container (once per sandbox handle)."""
    with _installed_lock:
        if sandbox in _installed and not force:
            return
    sandbox.write_file(CONTRACT_PATH, contract_source(), mode=0o644)
    sandbox.write_file(TOOLS_PATH, tools_source(), mode=0o755)
    with _installed_lock:
        _installed.add(sandbox)


def installed_sandboxes() -> int:
    """How many sandbox handles hold the program (those alive: a removed one is not kept)."""
    with _installed_lock:
        return len(_installed)


def run_tool(
    sandbox: Sandbox,
    call: ToolCall,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    output_limit: int = 30_000,
    max_timeout: float | None = None,
) -> ToolResult:
    """Run one tool call in ``sandbox`` and return its result.

    ``timeout`` applies when the call does not ask for one (bash's ``timeout`` argument);
    ``max_timeout``, when given, caps what a call may ask for. ``output_limit`` caps the
    output in characters; cut output says so.
    """
    try:
        arguments = validate_arguments(call.name, call.arguments)
    except ArgumentError as exc:
        return ToolResult(id=call.id, output=str(exc), error=True)
    seconds = float(arguments.get("timeout", timeout))
    if max_timeout is not None:
        seconds = min(seconds, max_timeout)
    if call.name == "bash":
        return _run_bash(sandbox, call.id, arguments["command"], seconds, output_limit)
    return _run_program(sandbox, call, arguments, seconds, output_limit)


def _run_bash(
    sandbox: Sandbox, call_id: str, command: str, seconds: float, output_limit: int
) -> ToolResult:
    if "\x00" in command:
        return ToolResult(
            id=call_id,
            output="bash: the command contains a NUL byte, which bash cannot run",
            error=True,
        )
    argv = ["bash", "-c", BASH_WRAPPER, "swe-bash"]
    encoded = command.encode("utf-8", "replace")
    if len(encoded) > ARGV_LIMIT:
        path = f"{REQUEST_DIR}/{uuid.uuid4().hex}.sh"
        sandbox.write_file(path, encoded)
        argv += ["", path]
    else:
        argv.append(command)
    result = sandbox.exec(argv, timeout=seconds)
    if result.timed_out:
        return _timed_out(call_id, result, seconds, output_limit)
    output, truncated = cap_output(result.output, output_limit)
    return ToolResult(
        id=call_id,
        output=output,
        exit_code=result.exit_code,
        truncated=truncated or result.truncated,
        duration=result.duration,
    )


def _run_program(
    sandbox: Sandbox, call: ToolCall, arguments: dict[str, Any], seconds: float, output_limit: int
) -> ToolResult:
    install_tools(sandbox)
    # the JSON answer must fit in the sandbox's own output cap, escapes included
    inner_limit = max(1000, min(output_limit, sandbox.limits.output_limit // 8))
    request = {
        "name": call.name,
        "arguments": arguments,
        "output_limit": inner_limit,
        "time_limit": max(1.0, seconds - _SEARCH_MARGIN),
        # the server's child for this call ends by itself then, as `timeout` ends the client
        "kill_after": seconds,
    }
    payload = json.dumps(request)
    for attempt in (1, 2):
        line = payload
        if len(payload) > ARGV_LIMIT:
            path = f"{REQUEST_DIR}/{uuid.uuid4().hex}.json"
            sandbox.write_file(path, payload)
            line = json.dumps({"request_file": path, "kill_after": seconds})
        argv = ["bash", "-c", CLIENT, "swe-tool", str(server_port()), line]
        result = sandbox.exec(argv, timeout=seconds)
        if result.timed_out:
            return _timed_out(call.id, result, seconds, output_limit)
        if attempt == 1 and _lost_program(result.stderr):
            install_tools(sandbox, force=True)  # the container lost the program: put it back
            continue
        break
    try:
        answer = json.loads(result.stdout)
        output = str(answer["output"])
    except (ValueError, KeyError, TypeError):
        detail = (result.stderr or result.stdout).strip()[-2000:] or f"exit code {result.exit_code}"
        return ToolResult(
            id=call.id,
            output=f"{call.name}: the tool failed inside the container: {detail}",
            exit_code=result.exit_code,
            error=True,
            duration=result.duration,
        )
    output, truncated = cap_output(output, output_limit)
    return ToolResult(
        id=call.id,
        output=output,
        exit_code=answer.get("exit_code"),
        error=bool(answer.get("error")),
        truncated=truncated or bool(answer.get("truncated")),
        duration=result.duration,
    )


def _timed_out(call_id: str, result: ExecResult, seconds: float, output_limit: int) -> ToolResult:
    partial, truncated = cap_output(result.output, max(1000, output_limit - 400))
    message = (
        f"The command was killed after {seconds:g} s (its time limit); the container is still "
        "usable. Give a larger timeout argument, or run it in the background "
        "(`nohup cmd > /tmp/log 2>&1 &`) and check on it later."
    )
    if partial.strip():
        message += f"\nOutput before it was killed:\n{partial}"
    return ToolResult(
        id=call_id,
        output=message,
        error=True,
        timed_out=True,
        truncated=truncated,
        duration=result.duration,
    )


ToolRunner = Callable[[ToolCall, float], ToolResult]
"""Runs one tool call with a timeout in seconds; returns an error result for a bad call."""


def default_tools() -> list[dict[str, Any]]:
    """The sandbox tools' schemas (``sandbox_tools.schemas.TOOLS``)."""
    from sandbox_tools.schemas import TOOLS

    return [dict(t) for t in TOOLS]


def sandbox_tool_runner(sandbox: Sandbox, *, output_limit: int = 30_000) -> ToolRunner:
    """A :data:`ToolRunner` for the sandbox tools in ``sandbox``: the per-call timeout is the
    default and the cap (a bash call may ask for less, never for more)."""

    def run(call: ToolCall, timeout: float) -> ToolResult:
        try:
            return run_tool(
                sandbox, call, timeout=timeout, max_timeout=timeout, output_limit=output_limit
            )
        except DiskLimitExceeded:
            raise
        except SandboxError:
            # the participant can stop its own container (`kill 1` ends its init): start it
            # again and say so, instead of blaming the infrastructure; a daemon that went
            # away or a container that is gone still raises
            if not sandbox.exists() or sandbox.is_running():
                raise
            sandbox.kill_processes()
            return ToolResult(
                id=call.id,
                output="The container had stopped (its first process ended, e.g. after "
                "`kill 1`). It was started again: files are kept, running processes and "
                "the shell's state are lost. This call did not run.",
                error=True,
            )

    return run


def _lost_program(stderr: str) -> bool:
    """The container lost the tools program or its contract (a participant removed them)."""
    return ("can't open file" in stderr and TOOLS_PATH in stderr) or (
        "No module named 'contract'" in stderr
    )
