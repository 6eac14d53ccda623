"""The site's reference pages are generated from the code: each status, reason and exit
status has its meaning, every command its ``--help``, and ``results.json`` its schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from orchestrator.context.run_dir import RunDir
from orchestrator.frontends.docs.reference_pages import (
    EXIT_MEANING,
    REASON_MEANING,
    STATUS_MEANING,
    cli_reference,
    fill,
)
from orchestrator.models import InstanceResult, Reason, Status
from orchestrator.run.leaderboard import write_leaderboard
from orchestrator.run.outcome import __doc__ as outcome_doc
from orchestrator.run.results_file import ResultsFile

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_every_status_reason_and_exit_status_has_its_meaning() -> None:
    assert set(STATUS_MEANING) == set(Status)
    assert set(REASON_MEANING) == set(Reason)
    documented = {int(line.split()[0]) for line in (outcome_doc or "").splitlines()
                  if line[:1].isdigit()}  # fmt: skip
    assert set(EXIT_MEANING) == documented


def test_the_cli_reference_has_every_command() -> None:
    text = cli_reference()
    for command in ("run", "demo", "assess", "serve", "validate", "report", "images build",
                    "instances ls", "envs prune", "sandbox ls", "participant gold"):  # fmt: skip
        assert f"### `swe-green {command}`" in text, command
    assert "Usage: swe-green assess [OPTIONS]" in text


def test_every_generated_marker_of_the_pages_has_a_generator() -> None:
    pages = list(DOCS.rglob("*.md"))
    marked = [page for page in pages if "<!-- generated:" in page.read_text()]
    assert len(marked) >= 4
    for page in marked:
        assert "<!-- generated:" not in fill(page.read_text()), page
    with pytest.raises(KeyError, match="no generator 'nope'"):
        fill("<!-- generated: nope -->")


def test_results_json_follows_its_documented_schema(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    result = InstanceResult(instance_id="demo__calc-1", repo="demo/calc", status=Status.NO_OP,
                            reason=Reason.EMPTY_PATCH)  # fmt: skip
    path = write_leaderboard(run, "agent", "gold-demo", [result])
    written = json.loads(path.read_text())
    jsonschema.validate(written, ResultsFile.model_json_schema())
    assert written["participants"] == {"agent": "gold-demo"}
    assert written["results"][0]["no_op_count"] == 1
    assert written["instances"][0]["reason"] == "empty_patch"
    on_disk = json.loads(run.write_result(result).read_text())
    jsonschema.validate(on_disk, InstanceResult.model_json_schema())
