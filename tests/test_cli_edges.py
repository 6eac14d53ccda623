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

from orchestrator.frontends.cli.commands_envs import prune_lines
from orchestrator.frontends.cli.commands_validate import summary_table
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

    run_id = f"run-20261127-201010-{TEST_RUN_ID[-8:]}"  # as long as a real run's id
    grading = make_sandbox(run_id=run_id, instance_id=LONG_ID, role="grade")
    participant = make_sandbox(run_id=run_id, instance_id="demo__units-1", role="participant")
    done = _swe_green(["sandbox", "ls", "--run", run_id], dict(os.environ))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), done.stdout
    rows = [line for line in lines if line.strip() and not set(line.strip()) <= {"─"}][1:]
    rows = [row for row in rows if not row.startswith("Open one with")]
    assert len(rows) == 2, done.stdout  # one line per container: nothing wraps
    by_instance = {row.split()[0]: row.split() for row in rows}
    # the instance and run columns whole, never cut in a word
    assert by_instance[LONG_ID][1:3] == [run_id, "running"], done.stdout
    assert by_instance["demo__units-1"][1:3] == [run_id, "running"], done.stdout
    assert by_instance[LONG_ID][3].startswith("gr"), done.stdout  # the role, cut at most
    assert "swe-green inspect INSTANCE --run RUN" in done.stdout
    wide = subprocess.run(
        [SWE_GREEN, "sandbox", "ls", "--run", run_id], capture_output=True, text=True,
        timeout=600, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    assert grading.name in wide.stdout and participant.name in wide.stdout


@pytest.mark.parametrize("command", [["serve"], ["participant", "empty"]])
def test_a_port_in_use_exits_2_with_one_line_naming_it(command: list[str]) -> None:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        done = subprocess.run(
            [SWE_GREEN, *command, "--host", "127.0.0.1", "--port", str(port)],
            capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "80"},
        )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "listening on" not in done.stdout  # said only once the port is bound
    errors = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(errors) == 1, done.stderr  # one line, no traceback
    assert f"Port {port} on 127.0.0.1 is in use" in errors[0]
    assert (
        f"Fix: stop that server, or pass --port with a free port (e.g. --port {port + 1})"
        in (errors[0])
    )


def test_an_unwritable_output_is_named_as_the_option(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n")
    env = {**os.environ, "SWE_GREEN_DATA_DIR": str(tmp_path / "data"),
           "SWE_GREEN_RUNS_DIR": str(tmp_path / "runs")}  # fmt: skip
    done = _swe_green(
        ["run", "--participant", "empty", "--id", "x", "--output", str(blocker / "run")], env
    )
    assert done.returncode == 2, done.stdout + done.stderr
    said = " ".join(done.stderr.split())
    assert f"Cannot write to --output {blocker / 'run'}" in said, said
    assert "Fix: pass --output a directory you can write to." in said
    assert "runs_dir" not in said and not list(tmp_path.glob("runs/*"))


def test_output_to_a_pipe_is_neither_wrapped_nor_boxed(synthetic_dir: Path, tmp_path: Path) -> None:
    """A process whose output goes to a pipe, with no COLUMNS: no line is wrapped (a name a
    script greps for stays whole on its line) and a table draws no rules."""
    rows = [json.loads(line) for line in (synthetic_dir / "instances.jsonl").open()]
    long_id = "very-long-organisation-name__very-long-repository-name-" + "1" * 60
    long = {**rows[0], "instance_id": long_id, "repo": "o" * 70 + "/" + "r" * 70}
    dataset = tmp_path / "instances.jsonl"
    dataset.write_text("".join(json.dumps(row) + "\n" for row in [*rows, long]))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.update(SWE_GREEN_DATASET=str(dataset), SWE_GREEN_DATA_DIR=str(tmp_path))
    done = subprocess.run(
        [SWE_GREEN, "instances", "ls"], capture_output=True, text=True, timeout=600, env=env
    )
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if long_id in line)
    assert long["repo"] in line  # the id and its repository on one line, whole
    assert not any(ch in done.stdout for ch in "─│┃━"), done.stdout
    # the help is wrapped once, as a paragraph: no line ends mid-sentence and starts again
    helped = subprocess.run(
        [SWE_GREEN, "gc", "--help"], capture_output=True, text=True, timeout=60, env=env
    )
    paragraph = helped.stdout.split("\n\n")[2]
    assert paragraph.startswith("  What a live run") and "│" not in helped.stdout
    assert all(len(text) > 40 for text in paragraph.splitlines()[:-1]), paragraph
