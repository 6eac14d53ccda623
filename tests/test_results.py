"""The run directory, and the leaderboard query of DESIGN.md run by DuckDB on our files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from orchestrator.context.run_dir import RunDir, atomic_write_text
from orchestrator.models import CaseGroups as Groups
from orchestrator.models import InstanceResult, Reason, Status
from orchestrator.run.leaderboard import write_leaderboard

# DESIGN.md "Results", verbatim
LEADERBOARD_QUERY = """
SELECT list_filter(json_extract_string(to_json(results.participants), '$.*'), x -> x IS NOT NULL)[1] AS id,
  ROUND(unnest.resolved_pct * 100, 2) AS "Resolved %", ROUND(unnest.breaking_resolved_pct * 100, 2) AS "Breaking Resolved %",
  ROUND(unnest.partially_resolved_pct * 100, 2) AS "Partially Resolved %", ROUND(unnest.work_in_progress_pct * 100, 2) AS "Work In Progress %",
  ROUND(unnest.regression_pct * 100, 2) AS "Regression %", ROUND(unnest.no_op_pct * 100, 2) AS "No-Op %",
  ROUND(unnest.error_pct * 100, 2) AS "Error %", ROUND(unnest.fail_to_pass_passed_pct * 100, 2) AS "Fail→Pass %",
  ROUND(unnest.pass_to_pass_passed_pct * 100, 2) AS "Pass→Pass %", unnest.total_instances AS "Total Instances"
FROM results, UNNEST(results.results) ORDER BY unnest.resolved_pct DESC, unnest.error_pct ASC
"""  # noqa: E501


def _result(
    instance_id: str,
    status: Status,
    f: tuple[int, int] = (1, 0),
    p: tuple[int, int] = (1, 0),
    **extra: object,
) -> InstanceResult:
    groups = Groups(
        fail_to_pass_passed=[f"fp{i}" for i in range(f[0])],
        fail_to_pass_failed=[f"ff{i}" for i in range(f[1])],
        pass_to_pass_passed=[f"pp{i}" for i in range(p[0])],
        pass_to_pass_failed=[f"pf{i}" for i in range(p[1])],
    )
    return InstanceResult(instance_id=instance_id, repo="o/r", status=status, tests=groups, **extra)


def test_write_and_load_results(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    first = _result("django__django-11099", Status.RESOLVED, timings={"tests": 3.5})
    second = _result(
        "astropy__astropy-12907", Status.ERROR, reason=Reason.ENVIRONMENT, message="no python"
    )
    run.write_result(first)
    run.write_result(second)
    assert run.load_results() == [second, first]  # sorted by id
    assert run.finished_ids() == {"django__django-11099", "astropy__astropy-12907"}
    on_disk = json.loads((run.instance_dir("astropy__astropy-12907") / "result.json").read_text())
    assert on_disk["status"] == "error" and on_disk["reason"] == "environment"


def test_rewriting_a_result_replaces_it(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    run.write_result(_result("a__b-1", Status.ERROR))
    run.write_result(_result("a__b-1", Status.RESOLVED))
    assert [r.status for r in run.load_results()] == [Status.RESOLVED]


def test_config_and_text_files(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    assert run.read_config() == {}
    run.write_config({"concurrency": 4, "out": tmp_path})
    assert run.read_config() == {"concurrency": 4, "out": str(tmp_path)}
    path = run.write_text("a__b-1", "patch.diff", "diff --git a/x b/x\n")
    assert path == tmp_path / "run" / "instances" / "a__b-1" / "patch.diff"
    assert path.read_text() == "diff --git a/x b/x\n"


def test_no_temporary_files_are_left(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    run.write_result(_result("a__b-1", Status.RESOLVED))
    run.write_text("a__b-1", "setup.log", "ok\n")
    write_leaderboard(run, "agent", "me")
    leftovers = [p for p in tmp_path.rglob("*") if p.name.startswith(".") or p.suffix == ".tmp"]
    assert leftovers == []


def test_a_failed_write_keeps_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    atomic_write_text(path, "old\n")
    with pytest.raises(UnicodeEncodeError):
        atomic_write_text(path, "new \ud800 half-written")  # cannot be encoded
    assert path.read_text() == "old\n"
    assert list(tmp_path.iterdir()) == [path]


@pytest.mark.parametrize("bad", ["../escape", "a/b", "", ".hidden", "a..b", "x\n"])
def test_unsafe_names_are_rejected(tmp_path: Path, bad: str) -> None:
    run = RunDir(tmp_path)
    with pytest.raises(ValueError):
        run.instance_dir(bad)
    with pytest.raises(ValueError):
        run.write_text("a__b-1", bad, "x")


def test_unreadable_results_are_skipped(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    run.write_result(_result("a__b-1", Status.RESOLVED))
    (run.instance_dir("a__b-2") / "result.json").write_text("{not json")
    run.instance_dir("a__b-3")  # started, not finished
    assert [r.instance_id for r in run.load_results()] == ["a__b-1"]
    assert run.finished_ids() == {"a__b-1"}


def test_leaderboard_file_layout(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    run.write_result(_result("a__b-1", Status.RESOLVED))
    path = write_leaderboard(run, "swe_agent", "my-agent")
    data = json.loads(path.read_text())
    assert path == tmp_path / "results.json"
    assert data["participants"] == {"swe_agent": "my-agent"}
    assert len(data["results"]) == 1 and data["results"][0]["total_instances"] == 1
    assert data["instances"][0]["status"] == "resolved"


@pytest.mark.parametrize(
    ("dataset", "benchmark"),
    [
        ("princeton-nlp/SWE-bench_Verified", "swe-bench-verified"),
        ("lite", "swe-bench-lite"),
        ("/data/swe-bench-verified.jsonl", "swe-bench-verified"),
        ("/work/tasks/sqlfluff 2026/tasks.jsonl", "sqlfluff-2026"),
        ("/work/tasks/sqlfluff 2026/task-repo", "sqlfluff-2026"),
        ("/work/sqlfluff-2026.jsonl", "sqlfluff-2026"),
        ("/work/my tasks repo/", "my-tasks-repo"),
    ],
)
def test_the_results_name_the_dataset_the_run_graded(
    tmp_path: Path, dataset: str, benchmark: str
) -> None:
    """A run of fresh tasks is not reported as SWE-bench Verified: ``benchmark`` comes from
    the dataset its configuration records (Verified where none is recorded)."""
    run = RunDir(tmp_path)
    run.write_result(_result("a__b-1", Status.RESOLVED))
    assert json.loads(write_leaderboard(run, "agent", "me").read_text())["benchmark"] == (
        "swe-bench-verified"
    )
    run.write_config({"run_id": "r", "settings": {"dataset": dataset}})
    assert json.loads(write_leaderboard(run, "agent", "me").read_text())["benchmark"] == benchmark


def leaderboard_rows(results_dir: Path) -> list[tuple]:
    """DESIGN.md's leaderboard query, unchanged, over ``results_dir/*.json``."""
    con = duckdb.connect()
    if int(duckdb.__version__.split(".")[0]) >= 2:
        con.execute("SET lambda_syntax='ENABLE_SINGLE_ARROW'")
    con.execute(
        f"CREATE VIEW results AS SELECT * FROM read_json_auto('{results_dir.as_posix()}/*.json')"
    )
    return con.execute(LEADERBOARD_QUERY).fetchall()


def test_design_query_reads_our_results(tmp_path: Path) -> None:
    first = RunDir(tmp_path / "run1")
    for result in [
        _result("a__b-1", Status.RESOLVED, f=(2, 0), p=(3, 0)),
        _result("a__b-2", Status.RESOLVED, f=(1, 0), p=(0, 0)),
        _result("a__b-3", Status.PARTIALLY_RESOLVED, f=(1, 1), p=(2, 0)),
        _result("a__b-4", Status.ERROR, reason=Reason.TEST_TIMEOUT),
    ]:
        first.write_result(result)
    second = RunDir(tmp_path / "run2")
    for result in [
        _result("a__b-1", Status.RESOLVED, f=(1, 0), p=(1, 1)),
        _result("a__b-2", Status.NO_OP, f=(0, 1), p=(2, 0)),
        _result("a__b-3", Status.REGRESSION, f=(0, 1), p=(1, 3)),
    ]:
        second.write_result(result)
    results_dir = tmp_path / "results"
    results_dir.mkdir()
    shutil.copy(write_leaderboard(first, "swe_agent", "agent-one"), results_dir / "one.json")
    shutil.copy(write_leaderboard(second, "swe_agent", "agent-two"), results_dir / "two.json")

    rows = leaderboard_rows(results_dir)
    assert rows == [
        # id, resolved, breaking, partial, wip, regression, no-op, error, f2p, p2p, total
        ("agent-one", 50.0, 0.0, 25.0, 0.0, 0.0, 0.0, 25.0, 62.5, 75.0, 4),
        ("agent-two", 33.33, 0.0, 0.0, 0.0, 33.33, 33.33, 0.0, 33.33, 58.33, 3),
    ]


def test_design_query_reads_an_empty_run(tmp_path: Path) -> None:
    results_dir = tmp_path / "results"
    results_dir.mkdir()
    shutil.copy(write_leaderboard(RunDir(tmp_path / "run"), "agent", "nobody"), results_dir)
    assert leaderboard_rows(results_dir) == [
        ("nobody", 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0)
    ]


def test_result_log_paths_are_relative_to_the_instance_directory(tmp_path, monkeypatch):
    from orchestrator.models import InstanceResult, Status

    monkeypatch.chdir(tmp_path)
    run = RunDir("runs/r1")  # a run directory given relative to the working directory
    instance_dir = run.instance_dir("a__b-1")
    result = InstanceResult(
        instance_id="a__b-1", status=Status.RESOLVED,
        logs={
            "setup": "setup.log",  # relative to the instance directory already
            "graded_patch": "runs/r1/instances/a__b-1/graded.patch",  # to the working directory
            "tests": str((instance_dir / "test_output.txt").resolve()),  # absolute
            "elsewhere": "/var/log/syslog",  # outside: kept as given
        },
    )  # fmt: skip
    run.write_result(result)
    written = json.loads((instance_dir / "result.json").read_text())["logs"]
    assert written == {
        "setup": "setup.log", "graded_patch": "graded.patch", "tests": "test_output.txt",
        "elsewhere": "/var/log/syslog",
    }  # fmt: skip
