"""SWE-bench 5.x task repositories and dataset aliases as ``--dataset``: synthetic task
repositories made from real Verified rows, checked well formed and read by the ``swebench``
package's own code, then loaded here to the same instances."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from swebench.task.checks import check_task_repo, errors
from swebench.task.repo import load_task_repo

from orchestrator.dataset.instances import load_instances
from orchestrator.dataset.task_repo import resolve_alias
from orchestrator.errors import UserError

from .reference_data import VERIFIED, verified_row

IDS = ("astropy__astropy-12907", "django__django-11099", "sympy__sympy-20590")
PARSERS = {"astropy": "parse_log_astropy", "django": "parse_log_django", "sympy": "parse_log_sympy"}
EVAL_SH = "#!/bin/bash\necho '>>>>> Start Test Output'\npytest\necho '>>>>> End Test Output'\n"


@pytest.fixture(scope="module")
def rows() -> dict[str, dict]:
    return {instance_id: verified_row(instance_id) for instance_id in IDS}


def write_task(root: Path, row: dict, split: str = "test", **meta: object) -> Path:
    """One task directory as swebench 5.x lays it out (swebench.task.repo)."""
    task = root / "tasks" / row["instance_id"]
    task.mkdir(parents=True)
    owner = row["repo"].split("/")[0]
    keys = ("instance_id", "repo", "version", "base_commit", "environment_setup_commit",
            "created_at", "difficulty")  # fmt: skip
    data = {key: row[key] for key in keys}
    data |= {
        "split": split, "datasets": ["SWE-bench/SWE-bench_Verified"],
        "image": f"swebench/sweb.eval.x86_64.{row['instance_id'].lower()}:latest".replace(
            "__", "_1776_"
        ),
        "log_parser": PARSERS.get(owner, "parse_log_pytest"), "eval_type": "pass_and_fail",
        **meta,
    }  # fmt: skip
    (task / "task.yaml").write_text(yaml.safe_dump(data, sort_keys=True))
    tests = {"FAIL_TO_PASS": row["FAIL_TO_PASS"], "PASS_TO_PASS": row["PASS_TO_PASS"]}
    (task / "tests.json").write_text(json.dumps(tests, indent=2) + "\n")
    (task / "problem_statement.md").write_text(row["problem_statement"])
    (task / "gold.patch").write_text(row["patch"])
    (task / "test.patch").write_text(row["test_patch"])
    if row["hints_text"]:
        (task / "hints.md").write_text(row["hints_text"])
    (task / "eval.sh").write_text(EVAL_SH)
    (task / "Dockerfile").write_text("FROM scratch\n")
    return task


@pytest.fixture
def task_repo(tmp_path: Path, rows: dict[str, dict]) -> Path:
    root = tmp_path / "swe-bench-tasks"
    config = {"datasets": ["SWE-bench/SWE-bench_Verified"], "splits": ["test"]}
    root.mkdir()
    (root / "sweb.yaml").write_text(yaml.safe_dump(config))
    for row in rows.values():
        write_task(root, row)
    return root


def test_a_task_repository_loads_to_the_verified_instances(task_repo: Path, rows) -> None:
    assert errors(check_task_repo(task_repo)) == []  # well formed, by the official check
    official = {row["instance_id"]: row for row in load_task_repo(task_repo)}
    loaded = load_instances(str(task_repo))
    assert [i.instance_id for i in loaded] == sorted(IDS)
    jsonl = {i.instance_id: i for i in load_instances(str(VERIFIED))}
    for instance in loaded:
        # the same instance (datasets reads the JSONL's created_at as a time, without its Z)
        same = jsonl[instance.instance_id].model_copy(update={"created_at": instance.created_at})
        assert instance == same
        read = official[instance.instance_id]  # what the harness reads, column for column
        assert instance.test_patch == read["test_patch"] and instance.patch == read["patch"]
        assert instance.FAIL_TO_PASS == read["FAIL_TO_PASS"]
        assert instance.PASS_TO_PASS == read["PASS_TO_PASS"]


def test_a_task_repository_by_git_url(task_repo: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(task_repo), *args], check=True, capture_output=True)

    git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "tasks")
    loaded = load_instances(f"file://{task_repo}")
    assert [i.instance_id for i in loaded] == sorted(IDS)
    with pytest.raises(UserError, match="Cannot clone task repository"):
        load_instances(f"file://{task_repo}-missing.git")


def test_only_the_requested_split(task_repo: Path, rows) -> None:
    extra = dict(rows["django__django-11099"], instance_id="django__django-99999")
    write_task(task_repo, extra, split="dev")
    assert len(load_instances(str(task_repo))) == 3
    assert [i.instance_id for i in load_instances(str(task_repo), "dev")] == [
        "django__django-99999"
    ]
    with pytest.raises(UserError, match="no task in split 'train'"):
        load_instances(str(task_repo), "train")


def test_a_task_without_environment_setup_commit_uses_its_base(task_repo: Path, rows) -> None:
    task = task_repo / "tasks" / "sympy__sympy-20590"
    meta = yaml.safe_load((task / "task.yaml").read_text())
    del meta["environment_setup_commit"]
    (task / "task.yaml").write_text(yaml.safe_dump(meta))
    sympy = next(i for i in load_instances(str(task_repo)) if i.repo == "sympy/sympy")
    assert sympy.environment_setup_commit == sympy.base_commit


@pytest.mark.parametrize("meta", [{"log_parser": "parse_log_jest"}, {"language": "go"}])
def test_non_python_tasks_are_refused_in_one_message(task_repo: Path, rows, meta) -> None:
    foreign = dict(rows["django__django-11099"], instance_id="chartjs__Chart.js-1")
    write_task(task_repo, foreign, **meta)
    with pytest.raises(UserError) as err:
        load_instances(str(task_repo))
    message = str(err.value)
    assert "1 task(s) that are not Python: chartjs__Chart.js-1" in message
    assert "grades Python repositories" in message and "\n" not in message


def test_a_task_lacking_a_file_is_named(task_repo: Path) -> None:
    (task_repo / "tasks" / "django__django-11099" / "test.patch").unlink()
    with pytest.raises(UserError, match="django__django-11099 lacks test.patch"):
        load_instances(str(task_repo))


def test_aliases() -> None:
    assert resolve_alias("verified") == "princeton-nlp/SWE-bench_Verified"
    assert resolve_alias("Lite") == "princeton-nlp/SWE-bench_Lite"
    assert resolve_alias("full") == "princeton-nlp/SWE-bench"
    assert resolve_alias("owner/other") == "owner/other"
    with pytest.raises(UserError, match="not Python"):
        resolve_alias("multilingual")
    with pytest.raises(UserError, match="not Python"):
        load_instances("multimodal")


def test_written_tasks_are_a_task_repository_the_official_check_accepts(tmp_path: Path) -> None:
    """Kept tasks written as a task repository: swebench's check finds no error, and both
    its loader and ours read back every column (a task's own test directives too)."""
    from orchestrator.dataset.task_repo import write_task_repo
    from orchestrator.models import Instance

    rows = [verified_row("sympy__sympy-20590")]
    rows.append({**rows[0], "instance_id": "acme__sql-7", "repo": "acme/sql",
                 "patch": "diff --git a/x.py b/x.py\r\n+x\r\n", "hints_text": "",
                 "test_directives": ["test/a_test.py", "-k", "tsql and view"],
                 "FAIL_TO_PASS": ["test/a_test.py::test_parse[tsql-view.sql]"]})  # fmt: skip
    root = write_task_repo(tmp_path / "repo", rows, "acme-tasks")
    assert errors(check_task_repo(root)) == []
    official = {row["instance_id"]: row for row in load_task_repo(root)}
    loaded = {i.instance_id: i for i in load_instances(str(root))}
    for row in rows:
        want = Instance.model_validate(row)
        got = loaded[row["instance_id"]]
        assert got.model_copy(update={"created_at": want.created_at}) == want
        assert official[row["instance_id"]]["patch"] == row["patch"]
    assert loaded["acme__sql-7"].test_directives == ["test/a_test.py", "-k", "tsql and view"]
    write_task_repo(root, rows[:1], "acme-tasks")  # written again: the tasks replaced
    assert [i.instance_id for i in load_instances(str(root))] == ["sympy__sympy-20590"]
