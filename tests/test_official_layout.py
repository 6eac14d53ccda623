"""The official harness's layout written beside ours, read by the official package's own code
(``swebench`` from PyPI): its run summary and its resolution rule give our numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from swebench.harness.grading import get_resolution_status
from swebench.harness.reporting import make_run_report

from orchestrator.context.run_dir import RunDir
from orchestrator.frontends.report.fidelity import compare_official, load_official
from orchestrator.grading.failure_labels import failure_label
from orchestrator.models import CaseGroups, FailureLabel, InstanceResult, Reason, Status
from orchestrator.run.leaderboard import write_leaderboard
from orchestrator.run.official_layout import model_dir_name, official_test_output

RUN_ID = "run-20260101-000000-abcd1234"
MODEL = "acme/agent:1"  # a colon, as in real ids; the harness keeps it in the name
PATCH = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"


def _groups(f: tuple[int, int], p: tuple[int, int]) -> CaseGroups:
    return CaseGroups(
        fail_to_pass_passed=[f"t.py::f{i}" for i in range(f[0])],
        fail_to_pass_failed=[f"t.py::g{i}" for i in range(f[1])],
        pass_to_pass_passed=[f"t.py::p{i}" for i in range(p[0])],
        pass_to_pass_failed=[f"t.py::q{i}" for i in range(p[1])],
    )


# (instance id, status, reason, message, patch, test output, graded tests)
CASES: list[tuple[str, Status, Reason, str, str | None, str | None, CaseGroups]] = [
    ("o__r-1", Status.RESOLVED, Reason.NONE, "", PATCH, "1 passed", _groups((2, 0), (3, 0))),
    ("o__r-2", Status.BREAKING_RESOLVED, Reason.NONE, "", PATCH, "x", _groups((1, 0), (2, 1))),
    ("o__r-3", Status.NO_OP, Reason.PATCH_APPLY_FAILED, "does not apply", PATCH, None,
     _groups((0, 1), (2, 0))),
    ("o__r-4", Status.NO_OP, Reason.EMPTY_PATCH, "empty patch", "", None, _groups((0, 1), (1, 0))),
    ("o__r-5", Status.ERROR, Reason.TEST_TIMEOUT, "the tests ran longer than 1800 s", PATCH,
     "tests started\n", CaseGroups()),
    ("o__r-6", Status.ERROR, Reason.ENVIRONMENT,
     "clone failed: Could not resolve host: github.com", None, None, CaseGroups()),
    ("o__r-7", Status.REGRESSION, Reason.NONE, "", PATCH,
     "E   ModuleNotFoundError: No module named 'foo'\n", _groups((0, 1), (0, 2))),
    ("o__r-8", Status.ERROR, Reason.INFRASTRUCTURE, "internal error: boom", PATCH, None,
     CaseGroups()),
    ("o__r-9", Status.PARTIALLY_RESOLVED, Reason.NONE, "", PATCH, "ok", _groups((1, 1), (1, 0))),
]  # fmt: skip
NOT_RUN = "o__r-10"  # in the run's selection, no result (an interrupted run)


@pytest.fixture
def run(tmp_path: Path) -> RunDir:
    run_dir = RunDir(tmp_path / "run")
    run_dir.write_config({"run_id": RUN_ID, "instances": [c[0] for c in CASES] + [NOT_RUN]})
    for iid, status, reason, message, patch, output, tests in CASES:
        result = InstanceResult(
            instance_id=iid, repo="o/r", status=status, reason=reason, message=message,
            tests=tests, apply_strategy="git apply" if output is not None else None,
            failure_label=failure_label(status, reason, message, output or ""),
        )  # fmt: skip
        run_dir.write_result(result)
        if patch is not None:
            run_dir.write_text(iid, "patch.diff", patch)
        if output is not None:
            run_dir.write_text(iid, "test_output.txt", output)
            run_dir.write_text(iid, "eval.sh", "#!/bin/bash\npytest -rA t.py\n")
    write_leaderboard(run_dir, "agent", MODEL)
    return run_dir


def _predictions() -> dict[str, dict[str, str | None]]:
    """The predictions file (an instance that failed before its patch was taken has one)."""
    return {
        iid: {
            "instance_id": iid, "model_name_or_path": MODEL,
            "model_patch": PATCH if patch is None else patch,
        }
        for iid, *_, patch, _output, _tests in CASES
    }  # fmt: skip


def test_official_summary_reader_agrees(run: RunDir, tmp_path: Path, monkeypatch) -> None:
    ours_path = run.path / "swebench" / f"{model_dir_name(MODEL)}.{RUN_ID}.json"
    ours = json.loads(ours_path.read_text())
    monkeypatch.chdir(run.path / "swebench")  # the harness resolves logs/ from here
    dataset = [{"instance_id": c[0]} for c in CASES] + [{"instance_id": NOT_RUN}]
    official_path = make_run_report(_predictions(), dataset, RUN_ID, report_dir=str(tmp_path))
    official = json.loads(Path(official_path).read_text())
    assert official == ours
    row = json.loads(run.leaderboard_path.read_text())["results"][0]
    assert official["resolved_instances"] == row["resolved_count"] == 1
    assert official["error_instances"] == row["error_count"] == 3
    assert official["empty_patch_instances"] == 1
    assert official["unresolved_instances"] == row["total_instances"] - 1 - 3 - 1 == 4
    assert official["incomplete_ids"] == [NOT_RUN]
    assert official["failure_reasons"] == {
        "o__r-5": FailureLabel.TESTS_TIMED_OUT.value,
        "o__r-6": FailureLabel.NETWORK_UNREACHABLE.value,
        "o__r-7": FailureLabel.MISSING_MODULE.value,
    }
    assert official["infra_failure_ids"] == ["o__r-6"]
    assert official["ambiguous_failure_ids"] == ["o__r-5", "o__r-7"]


def test_reports_follow_the_official_resolution_rule(run: RunDir) -> None:
    base = run.path / "swebench/logs/run_evaluation" / RUN_ID / model_dir_name(MODEL)
    reports = {p.parent.name: json.loads(p.read_text()) for p in base.glob("*/report.json")}
    assert sorted(reports) == ["o__r-1", "o__r-2", "o__r-3", "o__r-7", "o__r-9"]
    for iid, report in reports.items():
        entry = report[iid]
        keys = {"patch_is_None", "patch_exists", "patch_successfully_applied", "resolved"}
        assert keys <= set(entry) and entry["patch_exists"] and not entry["patch_is_None"]
        if not entry["patch_successfully_applied"]:
            assert "tests_status" not in entry and not entry["resolved"]
            continue
        status = entry["tests_status"]
        assert set(status) == {"FAIL_TO_PASS", "PASS_TO_PASS", "FAIL_TO_FAIL", "PASS_TO_FAIL"}
        assert (get_resolution_status(status) == "RESOLVED_FULL") == entry["resolved"]
    assert reports["o__r-3"]["o__r-3"]["patch_successfully_applied"] is False
    assert reports["o__r-7"]["o__r-7"]["infra_failure_reason"] == "missing_module"
    assert reports["o__r-2"]["o__r-2"]["swe_green"]["status"] == "breaking_resolved"
    # the files beside each report; the timed-out run's output ends as the harness's does
    assert (base / "o__r-1" / "patch.diff").read_text() == PATCH
    assert (base / "o__r-1" / "eval.sh").is_file()
    assert "status: resolved" in (base / "o__r-1" / "run_instance.log").read_text()
    output = (base / "o__r-5" / "test_output.txt").read_text()
    assert output.endswith("Timeout error: 1800 seconds exceeded.")
    assert not (base / "o__r-4").exists()  # an empty patch is not run


def test_a_result_that_became_an_error_loses_its_report(run: RunDir) -> None:
    base = run.path / "swebench/logs/run_evaluation" / RUN_ID / model_dir_name(MODEL)
    assert (base / "o__r-2" / "report.json").is_file()
    result = next(r for r in run.load_results() if r.instance_id == "o__r-2")
    run.write_result(result.model_copy(update={"status": Status.ERROR}))
    write_leaderboard(run, "agent", MODEL)
    assert not (base / "o__r-2" / "report.json").exists()


def test_model_dir_name() -> None:
    assert model_dir_name("acme/agent-1") == "acme__agent-1"
    assert (
        model_dir_name("autocoderover-gpt4-0125:acr-run-1") == "autocoderover-gpt4-0125:acr-run-1"
    )
    assert model_dir_name("../x y") == "..__x y"  # one name: no path outside the layout
    assert model_dir_name("..") == "model" and model_dir_name("") == "model"


def test_report_official_reads_our_layout_in_full_agreement(run: RunDir) -> None:
    """``swe-green report --official`` on our own layout: every graded verdict and test agrees
    (what a user comparing two harnesses' outputs sees for the same run)."""
    base = run.path / "swebench/logs/run_evaluation" / RUN_ID / model_dir_name(MODEL)
    fidelity = compare_official(run.load_results(), load_official(base))
    graded = fidelity.graded_both
    expected = ["o__r-1", "o__r-2", "o__r-3", "o__r-7", "o__r-9"]
    assert sorted(i.instance_id for i in graded) == expected
    assert fidelity.verdicts_agreeing == len(graded)
    assert fidelity.tests_agreeing == fidelity.tests_compared > 0


def test_official_markers_replace_ours() -> None:
    output = (
        "+ git apply -v\n>>>>> SWE_GREEN_START 0f3a\nPASSED t.py::a\n"
        ">>>>> SWE_GREEN_END exit=0\n"  # printed by the tests: no nonce, before the real end
        ">>>>> SWE_GREEN_END 0f3a exit=1\nafter\n"
    )
    assert official_test_output(output) == (
        "+ git apply -v\n>>>>> Start Test Output\nPASSED t.py::a\n"
        ">>>>> SWE_GREEN_END exit=0\n>>>>> End Test Output\n>>>>> Test Exit Code: 1\nafter\n"
    )
    assert official_test_output("no markers\n") == "no markers\n"


@pytest.mark.container  # the official command opens a Docker client
def test_the_official_report_command_regrades_our_run_without_being_told(tmp_path: Path) -> None:
    """``run.json`` names the dataset the run used: ``swebench report <run id>``, run from
    ``<run>/swebench`` with no ``-d``, re-grades the saved test output with its own parser."""
    import subprocess
    import sys

    from orchestrator.grading.markers import END_MARKER, START_MARKER

    from .reference_data import VERIFIED

    iid = "astropy__astropy-12907"
    row = next(json.loads(line) for line in VERIFIED.open() if f'"{iid}"' in line[:80])
    # as the harness's own datasets have it: the image, the parser, the eval script
    row |= {"image": f"swebench/sweb.eval.x86_64.{iid.replace('__', '_1776_')}:latest",
            "log_parser": "parse_log_pytest", "eval_type": "pass_and_fail",
            "eval_script": "#!/bin/bash\npytest -rA\n"}  # fmt: skip
    dataset = tmp_path / "one.jsonl"
    dataset.write_text(json.dumps(row) + "\n")
    f2p, p2p = (x if isinstance(x, list) else json.loads(x) for x in (
        row["FAIL_TO_PASS"], row["PASS_TO_PASS"]))  # fmt: skip
    run_dir = RunDir(tmp_path / "run")
    run_dir.write_config({
        "run_id": RUN_ID, "instances": [iid],
        "settings": {"dataset": str(dataset), "dataset_split": "test"},
    })  # fmt: skip
    run_dir.write_result(InstanceResult(
        instance_id=iid, repo=row["repo"], status=Status.RESOLVED, apply_strategy="git apply",
        tests=CaseGroups(fail_to_pass_passed=f2p, pass_to_pass_passed=p2p),
    ))  # fmt: skip
    run_dir.write_text(iid, "patch.diff", row["patch"])
    run_dir.write_text(iid, "eval.sh", "#!/bin/bash\npytest -rA\n")
    passed = "".join(f"PASSED {name}\n" for name in f2p + p2p)
    run_dir.write_text(
        iid, "test_output.txt", f"{START_MARKER} 0f3a\n{passed}{END_MARKER} 0f3a exit=0\n"
    )
    write_leaderboard(run_dir, "gold", "gold")  # the model the official command re-grades
    official = run_dir.path / "swebench"
    recorded = json.loads((official / "logs/run_evaluation" / RUN_ID / "run.json").read_text())
    assert recorded["dataset"] == str(dataset) and recorded["split"] == "test"
    report = official / "logs/run_evaluation" / RUN_ID / "gold" / iid / "report.json"
    report.unlink()  # what the official command writes again
    done = subprocess.run(
        [str(Path(sys.executable).parent / "swebench"), "report", RUN_ID],
        cwd=official, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    regraded = json.loads(report.read_text())[iid]
    assert regraded["resolved"] is True
    assert sorted(regraded["tests_status"]["FAIL_TO_PASS"]["success"]) == sorted(f2p)
    summary = json.loads((official / f"gold.{RUN_ID}.json").read_text())
    assert summary["resolved_ids"] == [iid]


def test_run_json_names_the_dataset_as_the_harness_does(tmp_path: Path) -> None:
    from orchestrator.run.official_layout import run_metadata

    def named(dataset: str, split: str = "test") -> tuple[str, str, str | None] | None:
        found = run_metadata({"settings": {"dataset": dataset, "dataset_split": split}})
        return None if found is None else (found["dataset"], found["split"], found["task_repo"])

    assert named("Verified") == ("verified", "test", None)  # the harness's alias
    assert named("someone/SWE-bench_Fork", "dev") == ("someone/SWE-bench_Fork", "dev", None)
    local = tmp_path / "data" / "test.jsonl"
    local.parent.mkdir()
    local.write_text('{"instance_id": "x"}\n')
    assert named(str(local)) == (str(local), "test", None)
    assert named(str(local.parent)) == (str(local), "test", None)  # its one file
    assert named("https://example.org/tasks.git") == (
        "https://example.org/tasks.git",
        "test",
        "https://example.org/tasks.git",
    )
    assert run_metadata({"settings": {}}) is None
