"""``swe-green ARGS`` run in the test's own process, as the entry point runs it.

The command line's logic (parsing, settings, one-line errors, exit statuses, what it prints)
does not need a fresh interpreter: :func:`swe_green` calls :func:`orchestrator.frontends.cli.main`
with ``sys.argv``, the environment, the working directory and the standard streams swapped for
the call (click's test isolation), and returns what a subprocess would have. Tests whose point
is the process boundary (signals, Ctrl-C, the installed script) start a process instead and say
so in their docstring.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from click.testing import CliRunner

from orchestrator.frontends.cli.app import main


def swe_green(
    *args: str,
    env: Mapping[str, str | None] | None = None,
    input: str | None = None,
    cwd: str | Path | None = None,
    columns: int = 250,
) -> subprocess.CompletedProcess[str]:
    """Run the command line with ``args``; ``env`` adds to (``None``: removes from) the
    process's environment for the call. Output is as wide as ``columns``, as in a terminal."""
    overrides: dict[str, str | None] = {"COLUMNS": str(columns), **(env or {})}
    runner = CliRunner()
    with contextlib.ExitStack() as stack:
        stdout, stderr, _ = stack.enter_context(runner.isolation(input=input, env=overrides))
        if cwd is not None:
            stack.enter_context(contextlib.chdir(cwd))
        code = _exit_status(args)
        sys.stdout.flush()
        sys.stderr.flush()
        out, err = stdout.getvalue(), stderr.getvalue()
    return subprocess.CompletedProcess(
        ["swe-green", *args], code, out.decode(errors="replace"), err.decode(errors="replace")
    )


def _exit_status(args: tuple[str, ...]) -> int:
    """The exit status :func:`main` ends with (it always ends by ``SystemExit``)."""
    saved = sys.argv
    sys.argv = ["swe-green", *args]
    try:
        main()
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    finally:
        sys.argv = saved
    return 0


def environment_without(prefix: str) -> dict[str, str | None]:
    """Overrides for :func:`swe_green` that unset every variable starting with ``prefix``."""
    return {name: None for name in os.environ if name.startswith(prefix)}
