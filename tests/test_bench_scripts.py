"""No benchmark rots: every ``bench/`` script answers ``--help`` (without running anything)
and has a ``--smoke`` mode, and ``scripts/bench-smoke`` (run by ``scripts/test``) runs them all.
The smoke runs themselves need Docker: ``scripts/bench-smoke``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p.name for p in (ROOT / "bench").glob("*.py"))


def test_there_are_bench_scripts():
    assert "tools.py" in SCRIPTS and len(SCRIPTS) >= 5


# Runs each script as ``python bench/SCRIPT --help`` runs it (``__main__``, its directory first on
# sys.path), one after another in one interpreter: the imports they share are paid once.
_HELP_OF_EACH = """
import contextlib, io, json, runpy, sys, traceback
answers = {}
for path in sys.argv[1:]:
    out, err, code = io.StringIO(), io.StringIO(), 0
    sys.argv, sys.path[0] = [path, "--help"], path.rsplit("/", 1)[0]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        except BaseException:
            traceback.print_exc()
            code = 1
    answers[path.rsplit("/", 1)[1]] = [code, out.getvalue(), err.getvalue()]
print(json.dumps(answers))
"""


@pytest.fixture(scope="module")
def help_of_each() -> dict[str, list]:
    """Each script's ``--help`` answer: [exit status, stdout, stderr].

    A child interpreter, not this one: the scripts put ``bench/`` first on ``sys.path`` and
    import its modules by their bare names (``run``, ``setup``), which must not leak into the
    test process."""
    done = subprocess.run(
        [sys.executable, "-c", _HELP_OF_EACH, *(str(ROOT / "bench" / s) for s in SCRIPTS)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("script", SCRIPTS)
def test_bench_script_has_help_and_a_smoke_mode(script: str, help_of_each: dict[str, list]):
    code, stdout, stderr = help_of_each[script]
    assert code == 0, stderr[-2000:]
    assert stdout.startswith("usage:"), stdout[:500]
    assert "--smoke" in stdout


def test_scripts_test_runs_every_smoke_mode():
    runner = (ROOT / "scripts" / "bench-smoke").read_text()
    assert "ls bench/*.py" in runner and "--smoke" in runner
    for named in ("setup.py", "run.py", "ray_scaleout.py"):  # run first, by name
        assert f"bench/{named}" in runner and named in SCRIPTS
    assert "scripts/bench-smoke" in (ROOT / "scripts" / "test").read_text()
