"""``swe-green run --predictions``: a predictions file graded on the synthetic instances."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .conftest import cli_env, run_cli

pytestmark = pytest.mark.container

FIXTURES = Path(__file__).parent / "fixtures" / "patches"
# demo__calc-1's mul fixed, its floordiv not: one of two FAIL_TO_PASS tests passes
CALC_MUL_ONLY = (FIXTURES / "calc_mul_only.diff").read_text()


def test_a_predictions_file_is_graded_like_any_run(env_settings, synthetic_instances, tmp_path):
    stub = (FIXTURES / "binary_stub_new_png.diff").read_text()
    stub = stub[stub.index("diff --git a/test_plot.png") :]
    rows = [
        ("demo__calc-1", CALC_MUL_ONLY),
        ("demo__textkit-1", synthetic_instances["demo__textkit-1"].patch + stub),
        ("demo__units-1", None),
    ]
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text(
        "".join(
            json.dumps({"instance_id": i, "model_name_or_path": "agent-7", "model_patch": p}) + "\n"
            for i, p in rows
        )
    )
    env = {**cli_env(env_settings, tmp_path / "runs"), "COLUMNS": "250"}
    run_dir = tmp_path / "runs" / "preds"
    proc = run_cli(["run", "--predictions", str(predictions), "--output", str(run_dir)], env)
    out, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, out
    assert "3 instance(s)" in out
    board = json.loads((run_dir / "results.json").read_text())
    assert board["participants"] == {"agent": "agent-7"}
    statuses = {row["instance_id"]: row["status"] for row in board["instances"]}
    assert statuses == {
        "demo__calc-1": "partially_resolved",
        "demo__textkit-1": "resolved",
        "demo__units-1": "no_op",
    }
    instances = run_dir / "instances"
    textkit = json.loads((instances / "demo__textkit-1" / "result.json").read_text())
    assert "test_plot.png" in textkit["excluded_patch_files"]
    assert "test_plot.png" in (instances / "demo__textkit-1" / "apply.log").read_text()
    assert not (instances / "demo__units-1" / "transcript.jsonl").exists()  # no phase 5
    units = json.loads((instances / "demo__units-1" / "result.json").read_text())
    assert units["reason"] == "empty_patch"
    # calc's only FAIL_TO_PASS failure decided its verdict: re-run alone, it failed each time
    calc = json.loads((instances / "demo__calc-1" / "result.json").read_text())
    assert calc["flaky_tests"] == {} and calc["timings"]["flaky_reruns"] > 0
    reruns = (instances / "demo__calc-1" / "flaky_reruns.log").read_text()
    assert "3 re-run(s)" in reruns
    assert "tests/test_calc.py::test_floordiv_negative: FAILED FAILED FAILED FAILED" in reruns
    _official_reader_agrees(run_dir, rows, board)
    _official_grading_agrees(run_dir, synthetic_instances)

    # an earlier run's directory is a predictions source too: the same patches, regraded
    again = run_cli(
        ["run", "--predictions", str(run_dir), "--output", str(tmp_path / "runs" / "again"),
         "--id", "demo__calc-1"], env,
    )  # fmt: skip
    out, _ = again.communicate(timeout=900)
    assert again.returncode == 0, out
    board = json.loads((tmp_path / "runs" / "again" / "results.json").read_text())
    assert [row["status"] for row in board["instances"]] == ["partially_resolved"]


def _official_reader_agrees(run_dir: Path, rows: list, board: dict) -> None:
    """The official harness's summary code, run on our ``swebench/`` layout, writes our
    summary, with ``results.json``'s numbers."""
    from swebench.harness.reporting import make_run_report

    run_id = json.loads((run_dir / "config.json").read_text())["run_id"]
    predictions = {
        i: {"instance_id": i, "model_name_or_path": "agent-7", "model_patch": p} for i, p in rows
    }
    ours = json.loads((run_dir / "swebench" / f"agent-7.{run_id}.json").read_text())
    official_dir = run_dir / "official"
    here = os.getcwd()
    os.chdir(run_dir / "swebench")  # the harness reads logs/run_evaluation from here
    try:
        path = make_run_report(
            predictions, [{"instance_id": i} for i, _ in rows], run_id, report_dir=str(official_dir)
        )
    finally:
        os.chdir(here)
    official = json.loads(Path(path).read_text())
    assert official == ours
    row = board["results"][0]
    assert official["resolved_instances"] == row["resolved_count"] == 1
    assert official["error_instances"] == row["error_count"] == 0
    assert official["empty_patch_ids"] == ["demo__units-1"]
    assert official["unresolved_ids"] == ["demo__calc-1"]


def _official_grading_agrees(run_dir: Path, instances: dict) -> None:
    """The official grading code (its log parsers and resolution rule) on our layout's test
    output gives our report: the same tests passing and failing, the same verdict."""
    from swebench.harness.grading import get_eval_report
    from swebench.types import TestSpec

    run_id = json.loads((run_dir / "config.json").read_text())["run_id"]
    base = run_dir / "swebench" / "logs" / "run_evaluation" / run_id / "agent-7"
    parsers = {"demo__calc-1": "parse_log_pytest", "demo__textkit-1": "parse_log_django"}
    for instance_id, parser in parsers.items():
        ours = json.loads((base / instance_id / "report.json").read_text())[instance_id]
        left_out = set(ours["swe_green"]["pass_to_pass_excluded"])
        instance = instances[instance_id]
        spec = TestSpec(
            instance_id=instance_id, image="", eval_script_list=[], repo=instance.repo,
            version=instance.version, FAIL_TO_PASS=instance.FAIL_TO_PASS,
            PASS_TO_PASS=[t for t in instance.PASS_TO_PASS if t not in left_out],
            log_parser=parser, eval_type="pass_and_fail",
        )  # fmt: skip
        prediction = {"instance_id": instance_id, "model_patch": "x", "model_name_or_path": "m"}
        output = str(base / instance_id / "test_output.txt")
        official = get_eval_report(spec, prediction, output, True)[instance_id]
        assert official["patch_successfully_applied"], instance_id
        assert official["resolved"] == ours["resolved"], instance_id
        for group in ("FAIL_TO_PASS", "PASS_TO_PASS"):
            assert official["tests_status"][group] == ours["tests_status"][group], group


def test_a_bad_line_fails_before_any_container(env_settings, tmp_path):
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text(
        json.dumps({"instance_id": "demo__calc-1", "model_patch": ""}) + "\n"
        + json.dumps({"instance_id": "demo__nope-1", "model_patch": ""}) + "\n"
    )  # fmt: skip
    env = cli_env(env_settings, tmp_path / "runs")
    proc = run_cli(["run", "--predictions", str(predictions)], env)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 2, out
    assert "line 2: instance demo__nope-1 is not in the dataset" in out
    assert "Traceback" not in out
    # no run was started (a run directory comes before any container)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
