"""What a new user meets at the edges of the CLI: exit statuses as the README's table says
them, and tables read whole in an 80-column terminal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from orchestrator.frontends.commands import prune_lines
from orchestrator.frontends.commands_validate import summary_table
from orchestrator.housekeeping.prune import CachedImage, PrunePlan
from orchestrator.validation.sweep import SweepRecord

from .cli_in_process import swe_green

SWE_GREEN = str(Path(sys.executable).parent / "swe-green")
LONG_ID = "scikit-learn__scikit-learn-25747"


def _swe_green(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SWE_GREEN, *args], capture_output=True, text=True, timeout=600,
        env={**env, "COLUMNS": "80"},
    )  # fmt: skip


def _render(renderable: object, width: int = 80) -> str:
    console = Console(width=width, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(renderable)
    return console.export_text()


def test_instances_ls_keeps_ids_whole_at_80_columns(synthetic_dir: Path, tmp_path: Path) -> None:
    rows = [json.loads(line) for line in (synthetic_dir / "instances.jsonl").open()]
    long = {**rows[0], "instance_id": LONG_ID, "repo": "scikit-learn/scikit-learn"}
    long["difficulty"] = "15 min - 1 hour"
    dataset = tmp_path / "instances.jsonl"
    dataset.write_text("".join(json.dumps(row) + "\n" for row in [*rows, long]))
    env = {"SWE_GREEN_DATASET": str(dataset), "SWE_GREEN_DATA_DIR": str(tmp_path)}
    done = swe_green("instances", "ls", env=env, columns=80)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), done.stdout
    for row in [*rows, long]:
        assert any(line.startswith(row["instance_id"] + " ") for line in lines), done.stdout
    assert "15m-1h" in done.stdout


def test_validate_detail_is_whole_at_80_columns() -> None:
    message = (
        "environment setup: setup failed (install command): pip could not resolve "
        "numpy==1.21.6 for Python 3.11. Fix: check the recipe's python and its pins."
    )
    record = SweepRecord(
        instance_id=LONG_ID, repo="scikit-learn/scikit-learn", version="1.3", ok=False,
        stage="setup", message=message, cause="install failed", timings={"setup": 42.0},
    )  # fmt: skip
    text = _render(summary_table([record]))
    assert all(len(line.rstrip()) <= 80 for line in text.splitlines()), text
    assert LONG_ID in text and "42" in text
    # the detail column folded back into one string holds the whole message
    words = " ".join(text.split())
    assert "Fix: check the" in words and "pins." in words, text


def _image(tag: str, size: int) -> CachedImage:
    return CachedImage(
        id=f"sha256:{tag}", tag=tag, kind="env", size=size, last_used=time.time(), parent="",
        labels={},
    )  # fmt: skip


def test_prune_counts_what_it_removed_and_lists_the_same() -> None:
    plan = PrunePlan(
        remove=[_image(f"p/env:{i}", 1_000_000) for i in range(6)],
        keep=[_image("p/env:kept", 5_000_000)],
        containers=[],
    )
    done = prune_lines(plan, [f"p/env:{i}" for i in range(4)], dry_run=False)
    assert done[0] == "removed 4 image(s), 4.0MB; 3 kept, 7.0MB"
    listed = [line for line in done if line.startswith("  - ")]
    assert len(listed) == 4
    refused = [line for line in done if "the engine refused" in line]
    assert [line.split()[1] for line in refused] == ["p/env:4:", "p/env:5:"]
    dry = prune_lines(plan, [image.tag for image in plan.remove], dry_run=True)
    assert dry[0] == "would remove 6 image(s), 6.0MB; 1 kept, 5.0MB"
    assert len([line for line in dry if line.startswith("  - ")]) == 6


@pytest.mark.container
def test_run_without_a_base_image_is_a_setup_error(env_settings, tmp_path: Path) -> None:
    from .conftest import cli_env

    runs = tmp_path / "runs"
    env = {**cli_env(env_settings, runs), "SWE_GREEN_IMAGE_PREFIX": "swe-green-test-nobase"}
    done = _swe_green(["run", "--participant", "gold"], env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "No base image swe-green-test-nobase/base:*" in done.stderr
    assert "swe-green images build" in done.stderr and "Traceback" not in done.stderr
    assert not runs.exists() or not any(runs.iterdir()), "a run directory was left"


@pytest.mark.container
def test_validate_exits_3_when_no_environment_is_valid(env_settings, tmp_path: Path) -> None:
    from .conftest import cli_env

    recipes = json.loads(Path(env_settings.environment.recipes_file).read_text())
    for recipe in recipes:
        recipe["install"] = "echo broken on purpose >&2; exit 1"
    broken = tmp_path / "recipes.json"
    broken.write_text(json.dumps(recipes))
    env = {**cli_env(env_settings, tmp_path / "runs"), "SWE_GREEN_RECIPES_FILE": str(broken),
           "SWE_GREEN_KEEP_CONTAINERS": "never"}  # fmt: skip
    done = _swe_green(["validate", "--id", "demo__calc-1"], env)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "0/1 environment(s) valid" in done.stdout
    assert "broken on purpose" in " ".join(done.stdout.split()), done.stdout
    assert "no environment valid (exit status 3)" in done.stderr


@pytest.mark.container
def test_sandbox_ls_is_readable_at_80_columns(make_sandbox) -> None:
    from .conftest import TEST_RUN_ID

    sandbox = make_sandbox(instance_id=LONG_ID, role="grade")
    name = sandbox.name
    done = _swe_green(["sandbox", "ls", "--run", TEST_RUN_ID], dict(os.environ))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), done.stdout
    rows = [line for line in lines if line.strip() and not set(line.strip()) <= {"─"}][1:]
    assert len(rows) <= 2, done.stdout  # the name folds onto two lines at most
    assert "".join(line.split()[0] for line in rows) == name, done.stdout
