"""Each command's exit statuses are in one table of the reference, and a signal ends a
command in the status the table gives: Ctrl-C and SIGTERM stop a batch or client command
with 130 and a server (``serve``, a reference participant) with 0 after its clean stop.

These tests start processes: the point is the process boundary (signals, exit statuses)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.frontends.cli.app import COMMANDS
from orchestrator.frontends.docs.reference_pages import COMMAND_EXITS, fill

SWE_GREEN = [sys.executable, "-c", "from orchestrator.frontends.cli.app import main; main()"]


def test_every_command_has_its_exit_statuses_in_the_table() -> None:
    named = {
        word.strip("` ").rstrip(" …")
        for row in COMMAND_EXITS
        for word in row.split(", ")
    }  # fmt: skip
    for name in COMMANDS:
        assert name in named or f"{name} build" in named or f"{name} ls" in named, name
    page = fill("<!-- generated: command-exits -->")
    assert "| `serve, participant …` | 0 stopped by Ctrl-C or SIGTERM" in page


@pytest.fixture
def silent_server() -> Iterator[socket.socket]:
    """A listening socket that never answers what it accepts: a client waits on it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        sock.settimeout(60)
        yield sock


def _started(
    args: list[str], ready: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """``swe-green ARGS`` started; returns once it printed a line holding ``ready``."""
    proc = subprocess.Popen(
        [*SWE_GREEN, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        stdin=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:
        if ready in line:
            return proc
    raise AssertionError(f"swe-green {' '.join(args)} ended before saying {ready!r}")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_reference_participant_stopped_by_a_signal_exits_0(signum: signal.Signals) -> None:
    proc = _started(["participant", "empty", "--port", "0"], "listening on")
    proc.send_signal(signum)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert "Traceback" not in out


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_serve_stopped_by_a_signal_exits_0(signum: signal.Signals, tmp_path: Path) -> None:
    env = {**os.environ, "SWE_GREEN_DATA_DIR": str(tmp_path / "data"),
           "SWE_GREEN_RUNS_DIR": str(tmp_path / "runs")}  # fmt: skip
    proc = _started(["serve", "--port", "0"], "Application startup complete", env)
    proc.send_signal(signum)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert "Traceback" not in out


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_client_command_stopped_by_a_signal_exits_130(
    signum: signal.Signals, silent_server: socket.socket
) -> None:
    # `assess` waits on a green agent that never answers: the signal is sent once it has
    # connected, so that it lands in the wait (not in the interpreter's start-up)
    url = f"http://127.0.0.1:{silent_server.getsockname()[1]}/"
    proc = subprocess.Popen(
        [*SWE_GREEN, "assess", url, "--participant", "http://127.0.0.1:9/"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    connection, _ = silent_server.accept()
    with connection:
        connection.settimeout(30)
        assert connection.recv(4096).startswith(b"GET "), "the client sent no request"
        assert proc.poll() is None, proc.communicate()[0]
        proc.send_signal(signum)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 130, out
    assert "Traceback" not in out
