"""An interrupted assessment is not a finished one: the report names the selected instances
that have no result, and ``run --resume`` of an assessment's run keeps its selection and its
participant (never the whole dataset)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from orchestrator.context.run_dir import RunDir
from orchestrator.dataset.instances import Selection
from orchestrator.errors import UserError
from orchestrator.frontends.cli.run_plan import RunPlan, resumed
from orchestrator.frontends.report.text import render_text
from orchestrator.models import CaseGroups as Groups
from orchestrator.models import InstanceResult, Status

PARTICIPANT = "http://127.0.0.1:9019/"
CHOSEN = ["demo__calc-1", "demo__units-1"]


def _assessment_run(path: Path, *, selection: bool) -> RunDir:
    """An assessment's run as ``serve`` records it (``selection``: as it records it now;
    without: as runs recorded before it did), one of its two instances graded."""
    run = RunDir(path)
    config = {
        "run_id": path.name, "source": "a2a", "task_id": "t",
        "request": {"participants": {"agent": PARTICIPANT}, "config": {"count": 2}},
        "participant_id": "scripted", "instances": CHOSEN, "settings": {},
    }  # fmt: skip
    if selection:
        config |= {"participant": PARTICIPANT, "selection": {"ids": CHOSEN}}
    run.write_config(config)
    run.write_result(
        InstanceResult(
            instance_id=CHOSEN[0],
            status=Status.RESOLVED,
            tests=Groups(fail_to_pass_passed=["t"], pass_to_pass_passed=["u"]),
        )  # fmt: skip
    )
    return run


def _text(run: RunDir) -> str:
    console = Console(width=200, record=True)
    console.print(render_text(run))
    return console.export_text()


@pytest.mark.parametrize("selection", [True, False])
def test_the_report_of_an_interrupted_run_names_what_is_missing(
    tmp_path: Path, selection: bool
) -> None:
    run = _assessment_run(tmp_path / "a2a-20260101-000000-abcd", selection=selection)
    text = " ".join(_text(run).split())
    assert "Incomplete: 1 of 2 selected instance(s) have no result" in text
    assert "demo__units-1" in text and f"swe-green run --resume {run.path}" in text


def test_the_report_of_a_finished_run_says_nothing_of_it(tmp_path: Path) -> None:
    run = _assessment_run(tmp_path / "a2a-20260101-000000-abcd", selection=True)
    config = run.read_config() | {"instances": CHOSEN[:1]}
    run.config_path.write_text(json.dumps(config))
    assert "Incomplete" not in _text(RunDir(run.path))


@pytest.mark.parametrize("selection", [True, False])
def test_resume_of_an_assessment_keeps_its_selection_and_participant(
    tmp_path: Path, selection: bool
) -> None:
    run = _assessment_run(tmp_path / "a2a-20260101-000000-abcd", selection=selection)
    given = RunPlan(
        participant=None, participant_id=None, concurrency=None, selection=Selection(),
        overrides={},
    )  # fmt: skip
    plan = resumed(given, run.path)
    assert plan.selection.ids == CHOSEN
    assert plan.participant == PARTICIPANT
    assert plan.run_id == run.path.name
    other = RunPlan(
        participant="http://127.0.0.1:1/", participant_id=None, concurrency=None,
        selection=Selection(), overrides={},
    )  # fmt: skip
    with pytest.raises(UserError, match="the run was started with 'http://127.0.0.1:9019/'"):
        resumed(other, run.path)
