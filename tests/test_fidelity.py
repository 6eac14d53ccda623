"""The fidelity report: a run's verdicts against official report.json files, with causes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from orchestrator.context.run_dir import RunDir
from orchestrator.errors import UserError
from orchestrator.frontends.report.fidelity import (
    APPLIED_DIFFERENTLY,
    LEFT_OUT,
    OFFICIAL_ENV,
    STRICTER,
    compare_official,
    load_official,
)
from orchestrator.frontends.report.fidelity_text import render_markdown, summary_lines
from orchestrator.models import CaseGroups, InstanceResult, Reason, Status
from tests.cli_in_process import swe_green

OFFICIAL = Path(__file__).parent / "fixtures" / "official"


def _result(iid: str, status: Status, **tests: list[str]) -> InstanceResult:
    extra = {
        k: tests.pop(k) for k in ("stricter_than_official", "excluded_patch_files") if k in tests
    }
    return InstanceResult(instance_id=iid, status=status, tests=CaseGroups(**tests), **extra)


RESULTS = [
    _result("demo__agree-1", Status.RESOLVED, fail_to_pass_passed=["t.py::test_fix"],
            pass_to_pass_passed=["t.py::test_a", "t.py::test_b"]),
    _result("demo__offline-1", Status.RESOLVED, fail_to_pass_passed=["t.py::test_fix"],
            pass_to_pass_passed=["t.py::test_a"],
            pass_to_pass_excluded=["t.py::test_needs_internet"]),
    _result("demo__officialenv-1", Status.RESOLVED, fail_to_pass_passed=["t.py::test_fix"],
            pass_to_pass_passed=["t.py::test_a", "t.py::test_multiprocessing"]),
    _result("demo__stricter-1", Status.PARTIALLY_RESOLVED,
            fail_to_pass_failed=["test_MatrixSymbol_printing"], pass_to_pass_passed=["test_other"],
            stricter_than_official=["test_MatrixSymbol_printing"]),
    _result("demo__applied-1", Status.NO_OP, fail_to_pass_failed=["t.py::test_fix"],
            excluded_patch_files=["test_plot.png"]).model_copy(
        update={"reason": Reason.PATCH_APPLY_FAILED}),
    _result("demo__error-1", Status.ERROR).model_copy(update={"reason": Reason.ENVIRONMENT}),
]  # fmt: skip


def test_a_harness_log_tree_and_a_jsonl_read_the_same(tmp_path: Path) -> None:
    tree = load_official(OFFICIAL)
    assert len(tree) == 6 and tree["demo__offline-1"].resolved is False
    lines = [json.loads(path.read_text()) for path in sorted(OFFICIAL.rglob("report.json"))]
    jsonl = tmp_path / "official.jsonl"
    jsonl.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert load_official(jsonl) == tree
    replay = tmp_path / "replay.jsonl"  # the replay files' rows: instance_id + official
    replay.write_text(
        json.dumps({"instance_id": "x__y-1", "official": tree["demo__agree-1"].model_dump()})
    )
    assert load_official(replay)["x__y-1"] == tree["demo__agree-1"]


def test_agreement_and_every_cause() -> None:
    fidelity = compare_official(RESULTS, load_official(OFFICIAL))
    rows = {row.instance_id: row for row in fidelity.instances}
    assert len(fidelity.graded_both) == 5
    assert rows["demo__error-1"].cause == "not graded here: environment"
    assert rows["demo__agree-1"].verdict_agrees and rows["demo__agree-1"].tests_agreeing == 3
    assert (rows["demo__offline-1"].cause, rows["demo__offline-1"].tests_left_out) == (LEFT_OUT, 1)
    assert rows["demo__officialenv-1"].cause == OFFICIAL_ENV
    assert [d.test for d in rows["demo__officialenv-1"].disagreements] == [
        "t.py::test_multiprocessing"
    ]
    assert rows["demo__stricter-1"].cause == STRICTER
    assert rows["demo__applied-1"].cause == APPLIED_DIFFERENTLY
    assert fidelity.verdicts_agreeing == 1
    # the official environment's difference is not an agreement target
    assert len(fidelity.verdict_targets) == 4
    assert (fidelity.tests_agreeing, fidelity.tests_compared) == (8, 11)
    assert fidelity.agreement_targets == (8, 10)
    text = "\n".join(summary_lines(fidelity))
    assert "verdicts agree: 1/5 (20.0 %)" in text
    markdown = render_markdown(fidelity, "Fidelity")
    assert "| demo__stricter-1 | partially_resolved | resolved | stricter here |" in markdown
    assert "| demo__error-1 | error | resolved | not graded here: environment |" in markdown


def test_official_results_that_are_not_reports(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="holds no report.json"):
        load_official(tmp_path)
    bad = tmp_path / "x.jsonl"
    bad.write_text('{"a__b-1": {"tests_status": {}}}\n')
    with pytest.raises(UserError, match="a__b-1 is not a report.json"):
        load_official(bad)


def test_an_official_report_without_test_outcomes_compares_the_verdict_only():
    """Some published reports hold ``"tests_status": null`` (the harness recorded no test
    outcome): the verdict is compared, no test is."""
    from orchestrator.frontends.report.fidelity import OfficialReport

    report = OfficialReport.model_validate(
        {"resolved": False, "patch_successfully_applied": True, "tests_status": None}
    )
    assert report.tests_status == {} and report.tests("FAIL_TO_PASS", "failure") == []


def test_the_fidelity_page_names_no_path_of_this_host(tmp_path: Path) -> None:
    """Given absolute paths, the page names the official results and the predictions relative
    to the root of the repository that holds the page, or, outside it, by their names alone."""
    repo = tmp_path / "checkout"
    (repo / ".git").mkdir(parents=True)
    official = repo / "replay" / "official"
    shutil.copytree(OFFICIAL, official)
    run = RunDir(repo / "runs" / "run-1")
    run.write_config({"run_id": "run-1", "predictions": str(repo / "replay" / "preds.jsonl")})
    for result in RESULTS:
        run.write_result(result)
    for out, official_name, predictions_name in (
        (repo / "docs" / "fidelity.md", "replay/official", "replay/preds.jsonl"),
        (tmp_path / "fidelity.md", "official", "preds.jsonl"),
    ):
        done = swe_green("report", str(run.path), "--official", str(official),
                         "--fidelity-out", str(out))  # fmt: skip
        assert done.returncode == 0, done.stderr
        text = out.read_text()
        assert f"graded `{predictions_name}`" in text
        assert f"Official results: `{official_name}`" in text
        assert str(tmp_path) not in text and f"/{tmp_path.parts[1]}/" not in text
