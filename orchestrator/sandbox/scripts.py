"""Scripts as data: a :class:`Script` is a list of titled bash steps, :func:`render` makes
the one bash script that runs them in a container, and :func:`run_script` runs it there.

Each step prints ``>>>>> <title>`` to the set-up log; a failed step prints
``>>>>> FAILED: <why>`` and ends the script with status 1.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from orchestrator.atomic import append_text
from orchestrator.sandbox.protocol import Sandbox
from sandbox_tools.contract import ACTIVATE, SWE_DIR, TESTBED


class Step(BaseModel):
    """One step of a set-up script: the title the log shows before it, and its bash."""

    title: str
    bash: str


class Script(BaseModel):
    """A set-up script as data. ``activate``: the environment exists, and the script starts
    by sourcing its activate script (else it starts in the repository, before any venv)."""

    name: str  # the script's name in the set-up log
    steps: list[Step]
    activate: bool = True


_PRELUDE = """#!/bin/bash
set -uo pipefail
step() { echo; echo ">>>>> $*"; }
fail() { echo ">>>>> FAILED: $*"; exit 1; }
run_step() { echo "+ $1"; bash -c "$1"; }
"""


def render(script: Script) -> str:
    """The bash of ``script``: its steps in order, each under ``step "<title>"``."""
    start = (
        f'source {ACTIVATE} || fail "activating the environment"'
        if script.activate
        else f"cd {TESTBED}"
    )
    steps = "".join(f'step "{s.title}"\n{s.bash}\n' for s in script.steps)
    return f'{_PRELUDE}{start}\n{steps}step "done"\n'


class ScriptFailed(Exception):
    """A set-up script failed: the message says which step, and the log's last lines."""


def run_script(
    sandbox: Sandbox, script: Script | str, log_path: Path, timeout: float, name: str = ""
) -> None:
    """Run ``script`` in ``sandbox`` as root, appending its output to ``log_path``; raise
    :class:`ScriptFailed` when it fails or times out."""
    if isinstance(script, Script):
        name, script = name or script.name, render(script)
    path = f"{SWE_DIR}/{name}.sh"
    sandbox.write_file(path, script, mode=0o755)
    result = sandbox.exec(["bash", path], timeout=timeout)
    append_text(
        log_path,
        f"\n===== {name} (exit {result.exit_code}, {result.duration:.1f}s)\n" + result.output,
    )
    if result.timed_out:
        raise ScriptFailed(f"{name} timed out after {timeout:.0f}s")
    if result.exit_code != 0:
        failed = [ln for ln in result.stdout.splitlines() if ln.startswith(">>>>> FAILED")]
        tail = " | ".join(result.output.strip().splitlines()[-3:])[-400:]
        what = failed[-1].removeprefix(">>>>> FAILED: ") if failed else f"exit {result.exit_code}"
        raise ScriptFailed(f"{name} failed ({what}): {tail}")
