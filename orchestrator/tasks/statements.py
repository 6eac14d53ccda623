"""A candidate's problem statement: the issue its change fixes, where it can be had (an
exported issues file, or GitHub's API with a token), else the pull request's or the commit's
own text; and the check that a statement does not give the fix away.

The issues file is JSON lines, one issue a line, as GitHub's REST API returns an issue
(``number``, ``title``, ``body``, ``created_at``; a row with ``pull_request`` is a pull
request, and its text stands for that pull request) or as ``gh issue list --json
number,title,body,createdAt,closedByPullRequestsReferences`` writes them (a JSON array is
read too). ``closed_by`` (a list of pull request numbers) or GitHub's
``closedByPullRequestsReferences`` links an issue to the pull requests that closed it,
beside the closing keywords of the pull request's text (``Fixes #1234``)."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from orchestrator.errors import UserError

StatementSource = Literal["issue", "pull request", "commit"]
_CLOSING = re.compile(
    r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b\s*:?\s*"
    r"(?:#|gh-|https?://github\.com/[\w.-]+/[\w.-]+/issues/)(\d+)",
    re.I,
)
# what a change that fixes something says of itself
_FIX_WORDS = re.compile(
    r"\b(fix(e[sd]|ing)?|bug(s|fix)?|issue|error|crash(es|ed)?|regression|wrong|incorrect|"
    r"broken|fail(s|ed|ing|ure)?|raise[sd]?|exception|resolve[sd]?|close[sd]?|handle[sd]?)\b",
    re.I,
)


class Issue(BaseModel):
    number: int
    title: str = ""
    body: str = ""
    created_at: str = ""
    is_pull_request: bool = False
    closed_by: list[int] = Field(default_factory=list)


class IssueSource(Protocol):
    def issue(self, number: int) -> Issue | None: ...

    def closing(self, pull_request: int) -> list[int]: ...


class NoIssues:
    """No issue tracker: statements come from the history's own text."""

    def issue(self, number: int) -> Issue | None:  # noqa: ARG002 - none to be had
        return None

    def closing(self, pull_request: int) -> list[int]:  # noqa: ARG002 - none to be had
        return []


class IssuesFile:
    """Issues exported to a file (the module docstring's format), for offline collection."""

    def __init__(self, path: Path) -> None:
        try:
            text = path.read_text()
            rows = (
                json.loads(text)
                if text.lstrip().startswith("[")
                else [json.loads(line) for line in text.splitlines() if line.strip()]
            )
        except (OSError, ValueError) as exc:
            raise UserError(
                f"Cannot read issues file {path}: {str(exc).splitlines()[0]}",
                "pass a JSON lines file of issues, one a line (`swe-green tasks collect --help`).",
            ) from exc
        self.issues = {i.number: i for i in (issue_of(row) for row in rows) if i is not None}

    def issue(self, number: int) -> Issue | None:
        return self.issues.get(number)

    def closing(self, pull_request: int) -> list[int]:
        return sorted(n for n, i in self.issues.items() if pull_request in i.closed_by)


def issue_of(row: Any) -> Issue | None:
    """An issue from a REST API object or a ``gh issue list --json`` row (None: not one)."""
    if not isinstance(row, dict) or not isinstance(row.get("number"), int):
        return None
    closed = row.get("closed_by") or [
        ref.get("number") for ref in row.get("closedByPullRequestsReferences") or []
        if isinstance(ref, dict)
    ]  # fmt: skip
    return Issue(
        number=row["number"], title=str(row.get("title") or ""), body=str(row.get("body") or ""),
        created_at=str(row.get("created_at") or row.get("createdAt") or ""),
        is_pull_request="pull_request" in row,
        closed_by=[n for n in closed if isinstance(n, int)],
    )  # fmt: skip


class GitHubIssues:
    """Issues read from GitHub's REST API with a token (``api``: its base URL)."""

    def __init__(self, repo: str, token: str, api: str = "https://api.github.com") -> None:
        self.repo, self.token, self.api = repo, token, api.rstrip("/")
        self._cache: dict[int, Issue | None] = {}

    def issue(self, number: int) -> Issue | None:
        if number not in self._cache:
            request = urllib.request.Request(
                f"{self.api}/repos/{self.repo}/issues/{number}",
                headers={
                    "Authorization": f"Bearer {self.token}",
                    "Accept": "application/vnd.github+json",
                },
            )
            try:
                with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - the API's URL
                    self._cache[number] = issue_of(json.loads(response.read()))
            except (urllib.error.URLError, ValueError, TimeoutError):
                self._cache[number] = None
        return self._cache[number]

    def closing(self, pull_request: int) -> list[int]:  # noqa: ARG002 - the PR's text says
        return []


def linked_issues(text: str) -> list[int]:
    """The issues a pull request's or commit's text closes (``Fixes #1234``)."""
    return list(dict.fromkeys(int(n) for n in _CLOSING.findall(text)))


def names_a_fix(text: str) -> bool:
    """Whether a change's own text says it fixes something."""
    return bool(_FIX_WORDS.search(text))


class Statement(BaseModel):
    text: str
    source: StatementSource
    issues: list[int] = Field(default_factory=list)  # the issues it is made of
    created_at: str = ""  # the first issue's, when it is one


def problem_statement(
    issues: IssueSource, pull_request: int | None, title: str, body: str
) -> Statement:
    """The linked issues' titles and bodies where they can be had; else the pull request's
    text (from the tracker, else the merge's or squash's message); else the commit's."""
    own_text = f"{title}\n\n{body}".strip()
    tracked = issues.issue(pull_request) if pull_request is not None else None
    if tracked is not None and tracked.is_pull_request:
        own_text = f"{tracked.title}\n\n{tracked.body}".strip()
    numbers = linked_issues(own_text)
    if pull_request is not None:
        numbers += [n for n in issues.closing(pull_request) if n not in numbers]
    found = [i for i in (issues.issue(n) for n in numbers if n != pull_request) if i is not None]
    found = [i for i in found if not i.is_pull_request]
    if found:
        text = "\n\n".join(f"{i.title}\n\n{i.body}".strip() for i in found)
        return Statement(
            text=text, source="issue", issues=[i.number for i in found],
            created_at=found[0].created_at,
        )  # fmt: skip
    return Statement(text=own_text, source="pull request" if pull_request else "commit")


# a statement that quotes this many of the fix's added lines gives it away
LEAKED_LINES = 2
_MIN_LEAK_CHARS = 20
_DIFF_IN_TEXT = re.compile(r"^(@@ -\d+(,\d+)? \+\d+(,\d+)? @@|diff --git |\+\+\+ b/)", re.M)


def leak(statement: str, gold_added: list[str]) -> str:
    """Why ``statement`` gives the fix away ("" when it does not): it holds a diff, or it
    quotes ``LEAKED_LINES`` of the lines the fix adds (each of 20 characters or more,
    whitespace aside, that are not comments)."""
    if _DIFF_IN_TEXT.search(statement):
        return "the statement holds a diff"
    flat = " ".join(statement.split())
    quoted = []
    for line in dict.fromkeys(" ".join(line.split()) for line in gold_added):
        if len(line) >= _MIN_LEAK_CHARS and not line.startswith("#") and line in flat:
            quoted.append(line)
    if len(quoted) >= LEAKED_LINES:
        return f"the statement quotes {len(quoted)} lines of the fix: {quoted[0][:80]!r}"
    return ""
