"""``swe-green tasks collect``: candidate tasks from a real git repository's history made
in a temporary directory (squashed and merged pull requests, plain commits, dependency
changes), their statements, and the checks that drop a change (pure functions beside)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from orchestrator.models import CaseStatus
from orchestrator.tasks.changes import first_parent_changes, is_test_path, split_diff
from orchestrator.tasks.collect import Candidate, collect
from orchestrator.tasks.report import RepoTasks, markdown, parse_time, repo_tasks
from orchestrator.tasks.statements import (
    IssuesFile,
    NoIssues,
    leak,
    linked_issues,
    problem_statement,
)
from orchestrator.tasks.validate import TaskRecord, found_tests
from tests.cli_in_process import swe_green
from tests.test_infer import git, make_repo

CODE = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    total = a + b  # the sum, not the difference\n    return total\n"
NEG_TEST = "from widget import neg\n\ndef test_neg():\n    assert neg(1) == -1\n"
TEST = "from widget import add\n\ndef test_add():\n    assert add(1, 2) == 3\n"


def _history(root: Path) -> dict[str, str]:
    """A repository whose history holds each kind of change; their commits by name."""
    made = {}
    made["start"] = make_repo(
        root, {"setup.py": "from setuptools import setup\nsetup(name='widget')\n",
               "widget.py": CODE, "tests/test_widget.py": "def test_nothing():\n    pass\n"},
        "2024-01-01T00:00:00Z",
    )  # fmt: skip
    # a squashed pull request that fixes a bug and adds its test
    (root / "widget.py").write_text(FIXED)
    (root / "tests/test_widget.py").write_text(TEST)
    git("add", "-A", cwd=root)
    git("commit", "-q", "-m", "Fix add returning the difference (#1007)\n\nFixes #1003",
        cwd=root, when="2024-02-01T00:00:00Z")  # fmt: skip
    made["squash"] = git("rev-parse", "HEAD", cwd=root)
    # a docs-only pull request
    made["docs"] = make_repo(root, {"README.md": "widget\n"}, "2024-02-02T00:00:00Z")
    git(
        "commit",
        "--amend",
        "-q",
        "-m",
        "Document it (#1008)",
        cwd=root,
        when="2024-02-02T00:00:00Z",
    )
    # a dependency change: a new environment from here
    needs_attrs = "from setuptools import setup\nsetup(name='widget', install_requires=['attrs'])\n"
    make_repo(root, {"setup.py": needs_attrs},
              "2024-03-01T00:00:00Z")  # fmt: skip
    git(
        "commit",
        "--amend",
        "-q",
        "-m",
        "Require attrs (#1009)",
        cwd=root,
        when="2024-03-01T00:00:00Z",
    )
    # a merged pull request (a merge commit) that fixes a crash
    git("checkout", "-q", "-b", "topic", cwd=root)
    make_repo(root, {"widget.py": FIXED + "\ndef neg(a):\n    return -a\n",
                     "tests/test_neg.py": NEG_TEST},
              "2024-03-02T00:00:00Z")  # fmt: skip
    git("checkout", "-q", "main", cwd=root)
    git("merge", "-q", "--no-ff", "topic", "-m",
        "Merge pull request #1010 from someone/topic\n\nHandle negative numbers without a crash",
        cwd=root, when="2024-03-03T00:00:00Z")  # fmt: skip
    made["merge"] = git("rev-parse", "HEAD", cwd=root)
    return made


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    work = tmp_path_factory.mktemp("work")
    made = _history(work)
    mirror = tmp_path_factory.mktemp("mirrors") / "acme__widget.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(mirror)], check=True)
    return mirror, made


def test_the_first_parent_line_names_its_pull_requests(
    history: tuple[Path, dict[str, str]],
) -> None:
    mirror, made = history
    changes = first_parent_changes(mirror, "HEAD", "", "")
    assert [(c.kind, c.pull_request) for c in changes] == [
        ("squash", 1007), ("squash", 1008), ("squash", 1009), ("merge", 1010),
    ]  # fmt: skip
    merge = changes[-1]
    assert (
        merge.commit == made["merge"] and merge.title == "Handle negative numbers without a crash"
    )
    assert merge.paths == ["tests/test_neg.py", "widget.py"]  # against the first parent
    assert (
        changes[0].title == "Fix add returning the difference" and changes[0].body == "Fixes #1003"
    )


def test_candidates_in_swe_benchs_format(history: tuple[Path, dict[str, str]]) -> None:
    mirror, made = history
    candidates, report = collect(mirror, "acme/widget", "", "", NoIssues())
    assert report.mode == "pull requests" and report.changes == 4
    assert [c.instance_id for c in candidates] == ["acme__widget-1007", "acme__widget-1010"]
    assert [r.reason for r in report.rejected] == ["no test changed"] * 2
    squash, merge = candidates
    assert squash.base_commit == made["start"] and squash.commit == made["squash"]
    assert squash.patch.startswith("diff --git a/widget.py") and "tests/" not in squash.patch
    assert squash.test_patch.startswith("diff --git a/tests/test_widget.py")
    assert squash.statement_source == "pull request"  # the linked issue is nowhere to be had
    assert squash.created_at == "2024-02-01T00:00:00Z" and squash.FAIL_TO_PASS == []
    # the dependency change between them: two environments, each set up at its own base
    assert squash.version != merge.version and report.environments == 2
    assert squash.environment_setup_commit == squash.base_commit
    assert merge.version.startswith("2024.03.01-")


def test_the_linked_issue_is_the_statement(
    history: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    mirror, _ = history
    issues = tmp_path / "issues.jsonl"
    rows = [
        {"number": 1003, "title": "add() subtracts", "body": "add(1, 2) gives -1",
         "created_at": "2024-01-15T00:00:00Z"},
        {"number": 1004, "title": "negatives crash", "body": "neg fails",
         "createdAt": "2024-02-20T00:00:00Z",
         "closedByPullRequestsReferences": [{"number": 1010}]},
    ]  # fmt: skip
    issues.write_text("".join(json.dumps(r) + "\n" for r in rows))
    candidates, report = collect(mirror, "acme/widget", "", "", IssuesFile(issues))
    assert [(c.statement_source, c.issues) for c in candidates] == [
        ("issue", [1003]),
        ("issue", [1004]),
    ]
    assert candidates[0].problem_statement == "add() subtracts\n\nadd(1, 2) gives -1"
    assert candidates[0].created_at == "2024-01-15T00:00:00Z"  # the issue's
    assert report.statement_sources == {"issue": 2}


def test_a_date_range_and_commits_without_pull_requests(tmp_path: Path) -> None:
    make_repo(
        tmp_path,
        {"pkg/a.py": "x = 1\n", "pkg/tests/test_a.py": "def test(): pass\n"},
        "2023-01-01T00:00:00Z",
    )
    make_repo(
        tmp_path,
        {"pkg/a.py": "x = 2\n", "pkg/tests/test_a.py": "def test(): assert 1\n"},
        "2023-02-01T00:00:00Z",
    )
    git(
        "commit",
        "--amend",
        "-q",
        "-m",
        "Fix x being wrong",
        cwd=tmp_path,
        when="2023-02-01T00:00:00Z",
    )
    make_repo(
        tmp_path,
        {"pkg/a.py": "x = 3\n", "pkg/tests/test_a.py": "def test(): assert 2\n"},
        "2023-03-01T00:00:00Z",
    )
    git("commit", "--amend", "-q", "-m", "Tune x", cwd=tmp_path, when="2023-03-01T00:00:00Z")
    candidates, report = collect(
        tmp_path / ".git", "acme/pkg", "2023-01-15", "2023-12-31", NoIssues()
    )
    assert report.mode == "commits" and report.changes == 2
    assert [c.statement_source for c in candidates] == ["commit"]
    assert candidates[0].instance_id.startswith("acme__pkg-") and candidates[0].pull_request is None
    assert report.by_reason() == {"does not say it fixes something": 1}


def test_test_paths_and_the_diff_split() -> None:
    assert is_test_path("tests/test_x.py") and is_test_path("src/pkg/testing/util.py")
    assert (
        is_test_path("test_x.py") and is_test_path("pkg/x_test.py") and is_test_path("conftest.py")
    )
    assert not is_test_path("src/pkg/attest.py") and not is_test_path("src/contest/x.py")
    diff = "diff --git a/a.py b/a.py\n+x\ndiff --git a/tests/t.py b/tests/t.py\n+y\n"
    assert split_diff(diff) == (
        "diff --git a/a.py b/a.py\n+x\n",
        "diff --git a/tests/t.py b/tests/t.py\n+y\n",
    )


def test_a_statement_that_gives_the_fix_away_is_named() -> None:
    added = [
        "    total = a + b  # the sum, not the difference",
        "    return total",
        "    raise ValueError('negative width given')",
    ]
    assert leak("add() subtracts instead of adding", added) == ""
    assert leak("It should raise ValueError('negative width given').", added) == ""  # one line
    quoted = (
        "Change it to\n    total = a + b  # the sum, not the difference\n"
        "and raise ValueError('negative width given')"
    )
    assert leak(quoted, added).startswith("the statement quotes 2 lines of the fix")
    assert leak("@@ -1,2 +1,3 @@\n-x\n+y\n", added) == "the statement holds a diff"
    assert linked_issues(
        "Closes #1012, fixes gh-1013 and resolves https://github.com/a/b/issues/1014; see #1015"
    ) == [1012, 1013, 1014]
    assert problem_statement(NoIssues(), None, "Fix it", "").source == "commit"


def test_tests_found_before_and_after_the_fix() -> None:
    before = {"t::a": CaseStatus.FAILED, "t::b": CaseStatus.PASSED, "t::gone": CaseStatus.PASSED}
    after = {"t::a": CaseStatus.PASSED, "t::b": CaseStatus.PASSED, "t::new": CaseStatus.PASSED,
             "t::broken": CaseStatus.FAILED}  # fmt: skip
    assert found_tests(before, after) == (["t::a", "t::new"], ["t::b"])
    # a parameter made of the time: its name differs from run to run, and it is left out
    before = {"t::when[00:10:17]": CaseStatus.PASSED, "t::fixed[x]": CaseStatus.FAILED}
    after = {"t::when[00:10:37]": CaseStatus.PASSED, "t::fixed[x]": CaseStatus.PASSED,
             "t::added[y]": CaseStatus.PASSED}  # fmt: skip
    assert found_tests(before, after) == (["t::fixed[x]", "t::added[y]"], [])


def test_the_report_counts_reasons_environments_and_newer_tasks(
    history: tuple[Path, dict[str, str]],
) -> None:
    mirror, _ = history
    candidates, collected = collect(mirror, "acme/widget", "", "", NoIssues())
    records = [
        TaskRecord(instance_id=candidates[0].instance_id, repo="acme/widget",
                   version=candidates[0].version, kept=True, stage="done", seconds=60),
        TaskRecord(instance_id=candidates[1].instance_id, repo="acme/widget",
                   version=candidates[1].version, stage="discovery", seconds=30,
                   reason="no test fails before the fix and passes after it"),
    ]  # fmt: skip
    figures = repo_tasks(collected, records, [candidates[0]], parse_time("2024-01-20"))
    assert (figures.kept, figures.environments, figures.environments_built) == (1, 2, 2)
    assert figures.environments_validating == 1 and figures.seconds_per_kept == 90
    assert figures.newer == 1
    assert figures.rejected_at_validation == {"no test fails before the fix and passes after it": 1}
    page = markdown([figures], parse_time("2024-01-20"))
    # 2 candidates in the 31 days from 2024-02-01 to 2024-03-03, half of those validated kept
    assert figures.kept_a_month == pytest.approx(2 / (31 / (365.25 / 12)) / 2, rel=1e-2)
    assert "| acme/widget | 4 | 2 | 2 | 1 | 2 (2, 1) | 90 | 1.0 | 1.0 | 1 |" in page
    assert isinstance(figures, RepoTasks)


def test_tasks_collect_writes_candidates_offline(
    history: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    mirror, _ = history
    env = {"SWE_GREEN_MIRROR_DIR": str(mirror.parent), "SWE_GREEN_DATA_DIR": str(tmp_path / "data")}
    done = swe_green("tasks", "collect", "acme/widget", "--out", str(tmp_path / "out"), env=env)
    assert done.returncode == 0, done.stderr
    assert "4 pull requests, 2 candidate(s) in 2 environment(s)" in done.stdout
    lines = (tmp_path / "out/acme__widget/candidates.jsonl").read_text().splitlines()
    assert [Candidate.model_validate_json(line).pull_request for line in lines] == [1007, 1010]
    bad = swe_green("tasks", "collect", "widget", env=env)
    assert bad.returncode != 0 and "is not owner/name" in bad.stderr


def test_tasks_newer_than_a_cutoff_are_chosen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from orchestrator.dataset.instances import Selection, resolve, select
    from orchestrator.errors import UserError
    from orchestrator.frontends.server.assessment import parse_request
    from orchestrator.models import Instance
    from orchestrator.settings import load_settings

    rows = [
        {"instance_id": f"a__b-{n}", "repo": "a/b", "base_commit": "c",
         "environment_setup_commit": "c", "created_at": when}
        for n, when in enumerate(["2024-05-01T00:00:00Z", "2025-07-01T12:00:00+00:00", None])
    ]  # fmt: skip
    instances = [Instance.model_validate(r) for r in rows]
    assert [i.instance_id for i in select(instances, created_after="2025-06-01")] == ["a__b-1"]
    with pytest.raises(ValueError, match="not an ISO 8601 time"):
        Selection(created_after="last June")
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setenv("SWE_GREEN_DATASET", str(dataset))
    monkeypatch.setenv("SWE_GREEN_CREATED_AFTER", "2024-01-01")
    settings = load_settings()
    assert [i.instance_id for i in resolve(settings, Selection())] == ["a__b-0", "a__b-1"]
    assert len(resolve(settings, Selection(created_after="2025-01-01"))) == 1  # its own wins
    request = parse_request(json.dumps({"participants": {"agent": "http://127.0.0.1:1"},
                                        "config": {"created_after": "2025-06-01"}}))  # fmt: skip
    assert [i.instance_id for i in resolve(settings, request.selection())] == ["a__b-1"]
    monkeypatch.setenv("SWE_GREEN_CREATED_AFTER", "soon")
    with pytest.raises(UserError, match="created_after"):
        load_settings()


def test_a_resumed_run_keeps_its_records_and_asked_to_validates_the_rejected_again(
    tmp_path: Path,
) -> None:
    from orchestrator.context.run_context import RunContext
    from orchestrator.context.run_dir import RunDir
    from orchestrator.models import Instance
    from orchestrator.sandbox.local import LocalBackend
    from orchestrator.settings import Settings
    from orchestrator.tasks.validate import load_task_record
    from orchestrator.validation.sweep import INFRASTRUCTURE

    ctx = RunContext(
        Settings(data_dir=tmp_path / "data"), LocalBackend(), "tasks-t", RunDir(tmp_path / "run")
    )
    held = {
        "kept": TaskRecord(instance_id="a__b-1", repo="a/b", version="v", kept=True,
                           stage="done"),
        "rejected": TaskRecord(instance_id="a__b-2", repo="a/b", version="v",
                               reason="environment: install failed", cause="install failed"),
        "host": TaskRecord(instance_id="a__b-3", repo="a/b", version="v", reason="interrupted",
                           cause=INFRASTRUCTURE),
    }  # fmt: skip
    instances = {}
    for what, record in held.items():
        instances[what] = Instance(instance_id=record.instance_id, repo="a/b", base_commit="c",
                                   environment_setup_commit="c")  # fmt: skip
        folder = ctx.instance_dir(instances[what])
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "task.json").write_text(record.model_dump_json())

    def redone(again: bool) -> set[str]:
        return {w for w, i in instances.items() if load_task_record(ctx, i, again) is None}

    assert redone(again=False) == {"host"}
    assert redone(again=True) == {"rejected", "host"}
