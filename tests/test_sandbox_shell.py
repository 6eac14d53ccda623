"""A backend's interactive shell (``swe-green inspect``): it runs on this process's stdin and
stdout in the sandbox's directory and gives the shell's exit code. The Docker backend's is
exercised through ``inspect`` in tests/test_cli.py and tests/test_housekeeping.py."""

from __future__ import annotations

import subprocess
import sys

OPEN_A_SHELL = """
import sys
from orchestrator.sandbox.local import LOCAL_IMAGE, LocalBackend
from orchestrator.sandbox.models import SandboxSpec

backend = LocalBackend()
sandbox = backend.start(LOCAL_IMAGE, SandboxSpec(run_id="shell", instance_id="i", role="r"))
print("root", sandbox.root, flush=True)
code = backend.open_shell(sandbox.name, "bash", workdir=sys.argv[1])
print("code", code, flush=True)
sandbox.remove()
"""


def test_the_local_shell_reads_stdin_in_the_sandbox_directory() -> None:
    done = subprocess.run(
        [sys.executable, "-c", OPEN_A_SHELL, "/no/such/directory"],
        input="echo in-$PWD; exit 7\n", capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    root = done.stdout.split("root ", 1)[1].split()[0]
    assert f"in-{root}\n" in done.stdout and done.stdout.endswith("code 7\n")
