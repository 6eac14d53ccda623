"""``swe-green inspect`` on an instance whose run kept no container (a predictions run): the
grading state made again from the cached images and the run's patch, a shell with the
environment active, and the commands that re-run the FAIL_TO_PASS tests and the whole eval."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import cli_env, run_cli

pytestmark = pytest.mark.container

FIXTURES = Path(__file__).parent / "fixtures" / "patches"
# demo__calc-1's mul fixed, its floordiv not: one of two FAIL_TO_PASS tests passes
CALC_MUL_ONLY = (FIXTURES / "calc_mul_only.diff").read_text()


def _inspect(args: list[str], commands: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from orchestrator.frontends.cli.app import main; main()", "inspect",
         *args],
        input=commands, capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip


def test_inspect_recreates_the_grading_state_of_a_predictions_run(
    env_settings, tmp_path, docker_backend
):
    from orchestrator.housekeeping.inventory import list_containers

    predictions = tmp_path / "predictions.jsonl"
    row = {"instance_id": "demo__calc-1", "model_name_or_path": "a", "model_patch": CALC_MUL_ONLY}
    predictions.write_text(json.dumps(row) + "\n")
    env = {**cli_env(env_settings, tmp_path / "runs"), "COLUMNS": "250"}
    run_dir = tmp_path / "runs" / "preds"
    proc = run_cli(["run", "--predictions", str(predictions), "--output", str(run_dir)], env)
    out, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, out
    assert (run_dir / "viewer" / "index.html").is_file()  # every run writes its viewer
    result = json.loads((run_dir / "instances" / "demo__calc-1" / "result.json").read_text())
    assert result["status"] == "partially_resolved" and result["container"] is None

    commands = (
        "echo python=$(command -v python); python -c 'import pytest; print(\"pytest ok\")'\n"
        "git status --short\n"
        "bash /opt/swe/eval/fail_to_pass.sh > /tmp/f2p.txt; echo f2p-exit=$?\n"
        "grep -cE 'PASSED|FAILED' /tmp/f2p.txt; grep -E '^(PASSED|FAILED) ' /tmp/f2p.txt\n"
        "bash /opt/swe/eval/eval.sh | grep -c SWE_GREEN_END\n"
        "exit\n"
    )
    shell = _inspect(["demo__calc-1", "--run", str(run_dir)], commands, env)
    said = shell.stderr
    assert shell.returncode == 0, said
    # no container was kept: the state is made again, and inspect says how
    assert "No container of demo__calc-1 was kept: recreating its grading state" in said
    assert "environment image: from the cache" in said
    assert "from the cache" in said.split("instance image", 1)[1].splitlines()[0]
    assert "applied the run's graded.patch" in said and "applied the test patch" in said
    assert "Re-run the FAIL_TO_PASS tests: bash /opt/swe/eval/fail_to_pass.sh" in said
    assert "Re-run the whole eval:        bash /opt/swe/eval/eval.sh" in said
    got = shell.stdout
    assert "python=/opt/swe/" in got and "pytest ok" in got  # the environment is active
    assert " M calc/__init__.py" in got  # the working tree as graded: the patch applied
    assert " M tests/test_calc.py" in got  # and the test patch
    # the FAIL_TO_PASS tests alone, with the outcomes the run graded
    passed = {line.split()[1] for line in got.splitlines() if line.startswith("PASSED ")}
    failed = {line.split()[1] for line in got.splitlines() if line.startswith("FAILED ")}
    graded = result["tests"]
    assert passed == set(graded["fail_to_pass_passed"]), got
    assert failed == set(graded["fail_to_pass_failed"]), got
    assert "Removed swe-green-inspect-" in said
    leftovers = [c.name for c in list_containers(docker_backend) if c.role == "inspect"]
    assert not [name for name in leftovers if "demo__calc-1" in name], leftovers

    # no container and no run: the error names the fix
    missing = _inspect(["demo__absent-1"], "exit\n", env)
    assert missing.returncode != 0 and "--run RUN_DIR" in missing.stderr + missing.stdout
