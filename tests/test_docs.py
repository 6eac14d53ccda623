"""The user guide runs: every fenced block titled ``runs in CI`` is run, each page's blocks
in order in one bash (``set -e``), against the synthetic instances, in a scratch working
directory. A page whose commands drift from the command line fails here.

What the harness changes, and only that: the ports 9019 and 9009 of the pages become free
ports (other sessions may hold those), background jobs a failing page left are killed, and
the image prefix and data directory are the test session's."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "guide"
# the order the pages are read in: the demo first (it writes the demo instances)
PAGES = ["demo.md", "predictions.md", "agent.md", "serve.md", "nightly.md"]
BLOCK = re.compile(r'^```bash title="runs in CI"\n(.*?)^```$', re.S | re.M)


def ci_blocks(page: Path) -> list[str]:
    return BLOCK.findall(page.read_text())


def test_the_pages_with_commands_are_the_ones_run() -> None:
    with_blocks = sorted(p.name for p in GUIDE.glob("*.md") if ci_blocks(p))
    assert with_blocks == sorted(PAGES)
    for name in PAGES:  # every block is found whole (a fence left open would swallow text)
        for block in ci_blocks(GUIDE / name):
            assert "```" not in block, (name, block)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.container
@pytest.mark.timeout(3600)
def test_the_user_guide_runs(env_settings, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "scripts").symlink_to(ROOT / "scripts")  # the pages run scripts/nightly
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWE_GREEN_")}
    env.update(
        PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        HOME=str(tmp_path / "home"),
        COLUMNS="120",
        SWE_GREEN_DATA_DIR=str(env_settings.storage.data_dir),
        SWE_GREEN_IMAGE_PREFIX=env_settings.environment.image_prefix,
        SWE_GREEN_MEMORY="2g",
        SWE_GREEN_KEEP_CONTAINERS="never",
        SWE_GREEN_CONCURRENCY="2",
    )
    ports = {"9019": str(_free_port()), "9009": str(_free_port())}
    for name in PAGES:
        script = "\n".join(ci_blocks(GUIDE / name))
        for port, free in ports.items():
            script = script.replace(port, free)
        done = subprocess.run(
            ["bash", "-c", "set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n"
             + script],
            cwd=work, env=env, capture_output=True, text=True, timeout=1800,
        )  # fmt: skip
        said = f"--- {name}\n{done.stdout[-6000:]}\n--- stderr\n{done.stderr[-6000:]}"
        assert done.returncode == 0, said
        assert "Traceback" not in done.stdout + done.stderr, said
    # what the pages say happens, happened
    assert (work / "runs" / "preds" / "results.json").is_file()
    assert (work / "runs" / "preds" / "report.html").is_file()
    assert (work / "runs" / "agent" / "results.json").is_file()
    assert '"resolved_count": 1' in (work / "runs" / "assessment.json").read_text()
    # the journeys write nothing beside runs/ (and the link to scripts/ the test made)
    assert sorted(p.name for p in work.iterdir()) == ["runs", "scripts"]
    assert len(list((work / "runs" / "nightly" / "shard-1-of-1").glob("2026-01-0*T*/"))) == 2


def _commands(block: str) -> list[str]:
    """A block's commands: continuation lines joined, comments and blank lines dropped,
    spaces normalised."""
    joined = re.sub(r"\\\n", " ", re.sub(r"[ \t]+#[^'\"\n]*$", "", block, flags=re.M))
    return [" ".join(line.split()) for line in joined.splitlines() if line.strip()]


def test_the_readmes_recipes_are_the_guides_commands() -> None:
    """The README's short recipes are lines of the user guide's pages that run in CI (so
    they run too), apart from activating the virtual environment."""
    readme = (ROOT / "README.md").read_text()
    journeys = readme[readme.index("## Four journeys") :]
    journeys = journeys[: journeys.index("\n## ", 5)]
    recipes = re.findall(r"^```bash\n(.*?)^```$", journeys, re.S | re.M)
    assert len(recipes) == 5  # the settings, then one per journey
    guide = {cmd for name in PAGES for b in ci_blocks(GUIDE / name) for cmd in _commands(b)}
    for recipe in recipes:
        for command in _commands(recipe):
            if command != "source .venv/bin/activate":
                assert command in guide, command


def test_the_guides_script_format_is_the_scripted_participants() -> None:
    """The agent page's example script is one the scripted participant reads, its tool calls
    the tools' own arguments, and every key of the format is described on the page."""
    import json

    from orchestrator.frontends.reference_participants.scripted import (
        FinalAnswer,
        Script,
        ScriptCall,
        ScriptTurn,
    )
    from sandbox_tools.schemas import ARGUMENTS

    page = (GUIDE / "agent.md").read_text()
    example = re.search(r'^```json title="script.json"\n(.*?)^```$', page, re.S | re.M)
    assert example, "agent.md has no script.json example"
    script = Script.model_validate(json.loads(example[1]))
    calls = [call for turn in script.turns for call in turn.calls]
    assert calls and all(call.name in ARGUMENTS for call in calls)
    for call in calls:
        ARGUMENTS[call.name].model_validate(call.arguments)
    described = page.split("## A scripted participant", 1)[1].split("\n## ", 1)[0]
    for model in (Script, ScriptTurn, ScriptCall, FinalAnswer):
        for key in model.model_fields:
            assert f"`{key}`" in described, f"{model.__name__}.{key} is not described"
