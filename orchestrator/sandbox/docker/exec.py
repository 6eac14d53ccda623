"""One command in a container: its output streamed and capped, a host-side backstop behind the
in-container ``timeout``, and its end (exit code, time limit, OOM kill) read from the engine."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from docker.api import APIClient
from docker.utils.socket import STDERR, STDOUT, frames_iter

from orchestrator.sandbox.docker.runtime import _BACKSTOP_GRACE, _ENGINE_ERRORS, _close
from orchestrator.sandbox.errors import SandboxError
from orchestrator.sandbox.models import ExecResult, OutputCap

# how a failure of the engine becomes the sandbox's error: (action, exception) -> error
Fail = Callable[[str, Exception], SandboxError]


@dataclass
class Stream:
    """A started exec and what it wrote: stdout and stderr (capped), and whether the backstop
    had to close the stream (the in-container ``timeout`` did not end the command)."""

    exec_id: str
    out: OutputCap
    err: OutputCap
    backstop_fired: bool


def stream_exec(
    api: APIClient, container_id: str, argv: Sequence[str], *, timeout: float,
    workdir: str | None, env: Mapping[str, str] | None, user: str, output_limit: int,
    fail: Fail,
) -> Stream:  # fmt: skip
    """Run ``argv`` under ``timeout -k 2`` and read its output to the end."""
    wrapped = ["timeout", "-k", "2", f"{max(timeout, 0.1):.1f}s", *argv]
    try:
        exec_id = api.exec_create(
            container_id,
            wrapped,
            workdir=workdir,
            environment=dict(env or {}),
            user=user,
        )["Id"]
        sock = api.exec_start(exec_id, socket=True)
    except _ENGINE_ERRORS as exc:
        raise fail("exec", exc) from exc
    out, err, backstop_fired = _collect(sock, timeout, output_limit, fail)
    return Stream(exec_id, out, err, backstop_fired)


def exec_result(
    api: APIClient, container_id: str, stream: Stream, *, duration: float, timeout: float,
    label: str, fail: Fail,
) -> ExecResult:  # fmt: skip
    """How the command of ``stream`` ended, as the engine tells it."""
    try:
        state = api.exec_inspect(stream.exec_id)
    except _ENGINE_ERRORS as exc:
        raise fail("exec", exc) from exc
    exit_code = state.get("ExitCode")
    backstop_fired = stream.backstop_fired
    if state.get("Running") and not backstop_fired:
        raise SandboxError(
            f"cannot exec in container {label}: the output stream from the Docker "
            "daemon ended while the command was still running"
        )
    timed_out = backstop_fired or exit_code == 124 or (exit_code == 137 and duration >= timeout)
    oom = exit_code == 137 and not timed_out and _oom_kills(api, container_id) > 0
    return ExecResult(
        exit_code=exit_code,
        stdout=stream.out.text(),
        stderr=stream.err.text(),
        duration=duration,
        timed_out=timed_out,
        truncated=bool(stream.out.cut or stream.err.cut),
        oom_killed=oom,
    )


def _collect(
    sock: Any, timeout: float, output_limit: int, fail: Fail
) -> tuple[OutputCap, OutputCap, bool]:
    """stdout and stderr of an exec's stream (capped), and whether the host-side backstop
    had to close the stream (the in-container ``timeout`` did not end the command)."""
    out, err = OutputCap(output_limit), OutputCap(output_limit)
    backstop_fired = threading.Event()

    def backstop() -> None:
        backstop_fired.set()
        _close(sock)

    timer = threading.Timer(timeout + _BACKSTOP_GRACE, backstop)
    timer.daemon = True
    timer.start()
    try:
        for stream, data in frames_iter(sock, tty=False):
            if stream == STDERR:
                err.add(data)
            elif stream == STDOUT:
                out.add(data)
    except (OSError, ValueError) as exc:
        if not backstop_fired.is_set():
            raise fail("exec", exc) from exc
    finally:
        timer.cancel()
        _close(sock)
    return out, err, backstop_fired.is_set()


def _oom_kills(api: APIClient, container_id: str) -> int:
    """The container's OOM-kill counter (cgroup v1 or v2)."""
    probe = (
        "cat /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control "
        "2>/dev/null | awk '$1==\"oom_kill\"{print $2}'"
    )
    try:
        exec_id = api.exec_create(container_id, ["sh", "-c", probe])["Id"]
        text = api.exec_start(exec_id).decode(errors="replace").strip()
    except _ENGINE_ERRORS:
        return 0
    return int(text.split()[0]) if text.split() and text.split()[0].isdigit() else 0
