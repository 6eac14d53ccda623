"""The changes of a repository's history, read with git from its mirror: the first-parent
line of its default branch, each commit a change against its first parent. A merge commit
GitHub made (``Merge pull request #1234 from ...``) is that pull request; a commit whose
subject ends ``(#1234)`` is a squashed one. Pure functions split a change's diff into its
test part and the rest."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

from orchestrator.repos.git_commands import git

_FIELD, _RECORD = "\x1f", "\x1e"
_MERGE = re.compile(r"^Merge pull request #(\d+) from ")
_SQUASH = re.compile(r"\(#(\d+)\)\s*$")
# a path of the tests (SWE-bench's rule: a directory or file name naming them)
_TEST_PATH = re.compile(
    r"(^|/)(tests?|testing|e2e)(/|$)|(^|/)(test_[^/]*|[^/]*_tests?\.py|conftest\.py)$"
)
_DIFF_START = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.M)


class Change(BaseModel):
    """One commit of the first-parent line: what it changed against ``base``."""

    commit: str
    base: str
    pull_request: int | None = None  # the pull request it merged or squashed, when it says
    kind: str = "commit"  # "merge", "squash" or "commit"
    title: str = ""
    body: str = ""
    authored: datetime
    committed: datetime
    paths: list[str] = Field(default_factory=list)


def first_parent_changes(mirror: Path, ref: str, since: str, until: str) -> list[Change]:
    """The first-parent commits of ``ref`` committed in [since, until] (git dates), oldest
    first, each with the paths it changed against its first parent (root commits left out)."""
    fmt = _RECORD + _FIELD.join(["%H", "%P", "%at", "%ct", "%s", "%b"]) + _FIELD
    args = ["log", "--first-parent", "--diff-merges=first-parent", "--name-only"]
    args += [f"--format={fmt}"]
    args += [f"--since={since}"] if since else []
    args += [f"--until={until}"] if until else []
    out = git([*args, ref, "--"], mirror)
    changes = [_parse(record) for record in out.split(_RECORD)[1:]]
    return list(reversed([c for c in changes if c is not None]))


def _parse(record: str) -> Change | None:
    """One record: its header's fields, then (after the last field mark) the paths."""
    header, _, listed = record.rpartition(_FIELD)
    fields = header.split(_FIELD)
    if len(fields) < 6 or not fields[1].split():
        return None  # a root commit: no parent to compare with
    commit, parents, authored, committed, title, body = fields[:6]
    paths = [line for line in listed.splitlines() if line.strip()]
    parent_list = parents.split()
    kind, number = "commit", None
    if len(parent_list) > 1 and (match := _MERGE.match(title)):
        kind, number = "merge", int(match.group(1))
        lines = body.strip().splitlines()
        title, body = (lines[0], "\n".join(lines[1:]).strip()) if lines else (title, "")
    elif match := _SQUASH.search(title):
        kind, number = "squash", int(match.group(1))
        title = title[: match.start()].rstrip()
    return Change(
        commit=commit, base=parent_list[0], pull_request=number, kind=kind, title=title,
        body=body.strip(), authored=_time(authored), committed=_time(committed), paths=paths,
    )  # fmt: skip


def _time(stamp: str) -> datetime:
    return datetime.fromtimestamp(int(stamp), tz=UTC)


def is_test_path(path: str) -> bool:
    """Whether ``path`` belongs to the tests (SWE-bench's rule)."""
    return bool(_TEST_PATH.search(path))


def change_diff(mirror: Path, base: str, commit: str) -> str:
    """The change's unified diff, as a patch that applies with ``git apply`` (binary files
    as git's binary patches, no renames: each file deleted and added)."""
    return git(
        [
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-renames",
            "--binary",
            "--full-index",
            base,
            commit,
        ],
        mirror,
    )


def split_diff(diff: str) -> tuple[str, str]:
    """A diff's non-test part (the gold patch) and its test part (the test patch)."""
    starts = [m.start() for m in _DIFF_START.finditer(diff)] + [len(diff)]
    code: list[str] = []
    tests: list[str] = []
    for start, end in zip(starts, starts[1:], strict=False):
        chunk = diff[start:end]
        match = _DIFF_START.match(chunk)
        assert match is not None
        (tests if is_test_path(match.group(2)) else code).append(chunk)
    return "".join(code), "".join(tests)


def added_lines(diff: str) -> list[str]:
    """The lines a diff adds (without the ``+``), file headers left out."""
    return [
        line[1:]
        for line in diff.splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]
