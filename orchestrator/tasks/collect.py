"""Candidate instances from a repository's history (``swe-green tasks collect``).

Each change of the default branch's first-parent line in a date range (:mod:`.changes`):
its merged pull requests where the history has them (GitHub's merge commits, squash commits
naming the pull request), else every commit. A change is a candidate when it says it fixes
something (or closes an issue), changes Python code and tests: Python tests, or test data
that a test module reads (:mod:`.data_tests`: the candidate's ``test_directives`` then run
those modules on that data alone); the candidate is in
SWE-bench's format: ``base_commit`` its first parent, ``patch`` the non-test part,
``test_patch`` the test part, ``created_at``, ``problem_statement`` (:mod:`.statements`,
and ``statement_source`` says where from), and ``version`` and
``environment_setup_commit``: the changes whose dependency files do not change between them
share one environment, set up at the newest candidate's base of their span and named for
the commit that began the span. ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` are left to
validation (:mod:`.validate`). A change that is not a candidate keeps its reason."""

from __future__ import annotations

import re
import time
from collections import Counter
from pathlib import Path

from pydantic import BaseModel, Field

from orchestrator.models import Instance
from orchestrator.setup.infer.inference import REQUIREMENT_FILE
from orchestrator.tasks.changes import (
    Change,
    added_lines,
    change_diff,
    first_parent_changes,
    is_test_path,
    split_diff,
)
from orchestrator.tasks.data_tests import data_directives, data_paths
from orchestrator.tasks.statements import (
    IssueSource,
    leak,
    linked_issues,
    names_a_fix,
    problem_statement,
)

# the files the inference reads for an environment: a change to one begins a new span
DEPENDENCY_FILES = re.compile(
    r"^(pyproject\.toml|setup\.py|setup\.cfg|tox\.ini|noxfile\.py|pytest\.ini|"
    r"environment\.ya?ml|ci/environment\.ya?ml)$"
)


class Candidate(Instance):
    """A candidate instance: SWE-bench's fields, and where it came from."""

    statement_source: str = ""  # "issue", "pull request" or "commit"
    issues: list[int] = Field(default_factory=list)  # the issues its statement is made of
    pull_request: int | None = None
    commit: str = ""  # the change's own commit (the merge, the squash or the commit)
    merged_at: str | None = None  # when the change entered the branch


class Rejected(BaseModel):
    change: str  # the pull request (#1234) or the commit
    commit: str
    reason: str


class CollectReport(BaseModel):
    repo: str
    since: str
    until: str
    mode: str  # "pull requests" or "commits"
    changes: int = 0
    candidates: int = 0
    rejected: list[Rejected] = Field(default_factory=list)
    statement_sources: dict[str, int] = Field(default_factory=dict)
    environments: int = 0  # spans of unchanged dependency files among the candidates
    seconds: float = 0.0
    first: str = ""  # when the oldest change looked at entered the branch (ISO 8601)
    last: str = ""  # and the newest

    def by_reason(self) -> dict[str, int]:
        """The rejected changes counted by reason (a leak's quoted line left out)."""
        return dict(Counter(r.reason.split(":")[0] for r in self.rejected).most_common())


def collect(
    mirror: Path, repo: str, since: str, until: str, issues: IssueSource, ref: str = "HEAD"
) -> tuple[list[Candidate], CollectReport]:
    """The candidates of ``repo`` (its bare ``mirror``) committed in [since, until], and the
    report of the changes looked at."""
    started = time.monotonic()
    history = first_parent_changes(mirror, ref, "", until)  # spans need what came before
    in_range = first_parent_changes(mirror, ref, since, until) if since else history
    merged = [c for c in in_range if c.pull_request is not None]
    mode = "pull requests" if merged else "commits"
    report = CollectReport(repo=repo, since=since, until=until, mode=mode)
    changes = merged or in_range
    report.changes = len(changes)
    if changes:
        moments = sorted(c.committed for c in changes)
        report.first, report.last = _stamp(moments[0].isoformat()), _stamp(moments[-1].isoformat())
    candidates: list[Candidate] = []
    for change in changes:
        candidate, why = candidate_of(mirror, repo, change, issues)
        if candidate is None:
            report.rejected.append(
                Rejected(change=_label(change), commit=change.commit, reason=why)
            )
        else:
            candidates.append(candidate)
    report.environments = assign_environments(candidates, history)
    report.candidates = len(candidates)
    report.statement_sources = dict(Counter(c.statement_source for c in candidates))
    report.seconds = round(time.monotonic() - started, 1)
    return candidates, report


def _label(change: Change) -> str:
    return f"#{change.pull_request}" if change.pull_request else change.commit[:12]


def candidate_of(
    mirror: Path, repo: str, change: Change, issues: IssueSource
) -> tuple[Candidate | None, str]:
    """``change`` as a candidate, or None and why it is not one."""
    code = [p for p in change.paths if not is_test_path(p)]
    tests = [p for p in change.paths if is_test_path(p)]
    data = data_paths(tests)
    if not tests or not (data or any(p.endswith(".py") for p in tests)):
        return None, "no test changed"
    if not any(p.endswith(".py") for p in code):
        return None, "no Python code changed beside the tests"
    own_text = f"{change.title}\n\n{change.body}"
    if not (names_a_fix(own_text) or linked_issues(own_text)):
        return None, "does not say it fixes something"
    directives: list[str] = []
    if not any(p.endswith(".py") for p in tests):  # test data alone: the modules reading it
        directives = data_directives(mirror, change.commit, data)
        if not directives:
            return None, "no Python test changed, and none reads the changed test data"
    diff = change_diff(mirror, change.base, change.commit)
    patch, test_patch = split_diff(diff)
    if "GIT binary patch" in patch or "GIT binary patch" in test_patch:
        return None, "changes a binary file"
    statement = problem_statement(issues, change.pull_request, change.title, change.body)
    if not statement.text.strip():
        return None, "no problem statement"
    leaked = leak(statement.text, added_lines(patch))
    if leaked:
        return None, f"statement gives the fix away: {leaked}"
    owner_name = repo.replace("/", "__")
    suffix = str(change.pull_request) if change.pull_request else change.commit[:10]
    return Candidate(
        instance_id=f"{owner_name}-{suffix}", repo=repo, base_commit=change.base,
        environment_setup_commit=change.base, patch=patch, test_patch=test_patch,
        problem_statement=statement.text, statement_source=statement.source,
        issues=statement.issues, pull_request=change.pull_request, commit=change.commit,
        created_at=statement.created_at or _stamp(change.authored.isoformat()),
        merged_at=_stamp(change.committed.isoformat()), test_directives=directives,
    ), ""  # fmt: skip


def _stamp(iso: str) -> str:
    return iso.replace("+00:00", "Z")


def assign_environments(candidates: list[Candidate], history: list[Change]) -> int:
    """Set each candidate's ``version`` and ``environment_setup_commit``: the span of
    first-parent commits since the last change to a dependency file (:data:`DEPENDENCY_FILES`,
    requirements files) is one environment, named for the day and commit that began it, set
    up at the newest candidate base of the span (its dependencies resolved as of then).
    Returns the number of environments."""
    span_of: dict[str, Change] = {}
    start = history[0] if history else None
    for change in history:
        if any(_dependency_file(p) for p in change.paths):
            start = change
        if start is not None:
            span_of[change.commit] = start
    groups: dict[str, list[Candidate]] = {}
    for candidate in candidates:
        begun = span_of.get(candidate.base_commit)
        key = f"{begun.committed:%Y.%m.%d}-{begun.commit[:7]}" if begun else "unknown"
        groups.setdefault(key, []).append(candidate)
    for version, members in groups.items():
        newest = max(members, key=lambda c: c.merged_at or "")
        for candidate in members:
            candidate.version = version
            candidate.environment_setup_commit = newest.base_commit
    return len(groups)


def _dependency_file(path: str) -> bool:
    return bool(DEPENDENCY_FILES.match(path) or REQUIREMENT_FILE.match(path))
