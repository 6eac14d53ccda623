"""No benchmark rots: every ``bench/`` script answers ``--help`` (without running anything)
and has a ``--smoke`` mode, and ``scripts/bench-smoke`` (run by ``scripts/test``) runs them all.
The smoke runs themselves need Docker: ``scripts/bench-smoke``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p.name for p in (ROOT / "bench").glob("*.py"))


def test_there_are_bench_scripts():
    assert "tools.py" in SCRIPTS and len(SCRIPTS) >= 5


@pytest.mark.parametrize("script", SCRIPTS)
def test_bench_script_has_help_and_a_smoke_mode(script: str):
    done = subprocess.run(
        [sys.executable, f"bench/{script}", "--help"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("usage:"), done.stdout[:500]
    assert "--smoke" in done.stdout


def test_scripts_test_runs_every_smoke_mode():
    runner = (ROOT / "scripts" / "bench-smoke").read_text()
    assert "ls bench/*.py" in runner and "--smoke" in runner
    for named in ("setup.py", "run.py", "ray_scaleout.py"):  # run first, by name
        assert f"bench/{named}" in runner and named in SCRIPTS
    assert "scripts/bench-smoke" in (ROOT / "scripts" / "test").read_text()
