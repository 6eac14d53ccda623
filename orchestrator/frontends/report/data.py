"""What reports show of a run directory: per repository, triage of errors, run comparison.

An instance's duration is its ``timings["total"]`` when present, else the sum of its phase
timings.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from orchestrator.context.run_dir import RESULT_FILE, RunDir
from orchestrator.grading.classify import LeaderboardRow, aggregate
from orchestrator.grading.failure_labels import tier
from orchestrator.models import FailureLabel, InstanceResult, Reason, Status

REPORT_FILE = "report.html"
# files an instance directory may hold, linked from the HTML report when present
INSTANCE_FILES = (RESULT_FILE, "patch.diff", "transcript.jsonl", "test_output.txt", "setup.log")
STATUS_ORDER = list(Status)
STATUS_COLOURS = {
    Status.RESOLVED: "#2e9d4f",
    Status.BREAKING_RESOLVED: "#8bbf3c",
    Status.PARTIALLY_RESOLVED: "#d9b526",
    Status.WORK_IN_PROGRESS: "#e08b2c",
    Status.REGRESSION: "#c8412f",
    Status.NO_OP: "#8a8f98",
    Status.ERROR: "#6f42c1",
}
RICH_STYLES = {
    Status.RESOLVED: "green",
    Status.BREAKING_RESOLVED: "bright_green",
    Status.PARTIALLY_RESOLVED: "yellow",
    Status.WORK_IN_PROGRESS: "dark_orange",
    Status.REGRESSION: "red",
    Status.NO_OP: "grey62",
    Status.ERROR: "magenta",
}
_SECRET_KEY = re.compile(r"key|token|secret|password|auth", re.IGNORECASE)


def duration(result: InstanceResult) -> float:
    """Seconds the instance took: ``timings["total"]``, else the sum of the phases."""
    if "total" in result.timings:
        return result.timings["total"]
    return sum(result.timings.values())


def repo_of(result: InstanceResult) -> str:
    """The result's repository, or one derived from an ``owner__name-123`` instance id."""
    if result.repo:
        return result.repo
    owner_name = result.instance_id.rsplit("-", 1)[0]
    return owner_name.replace("__", "/", 1)


def format_seconds(seconds: float) -> str:
    if seconds >= 3600:
        return f"{int(seconds // 3600)}h {int(seconds % 3600 // 60):02d}m"
    if seconds >= 60:
        return f"{int(seconds // 60)}m {int(seconds % 60):02d}s"
    return f"{seconds:.1f}s"


def pct(fraction: float) -> str:
    return f"{fraction * 100:.2f}%"


@dataclass(frozen=True)
class RepoRow:
    repo: str
    instances: int
    resolved: int
    errors: int
    fail_to_pass: float  # mean fraction, an error counting 0

    @property
    def resolved_fraction(self) -> float:
        return self.resolved / self.instances if self.instances else 0.0


def per_repository(results: list[InstanceResult]) -> list[RepoRow]:
    """One row per repository, sorted by name."""
    grouped: dict[str, list[InstanceResult]] = defaultdict(list)
    for result in results:
        grouped[repo_of(result)].append(result)
    return [
        RepoRow(
            repo=repo,
            instances=len(group),
            resolved=sum(r.status == Status.RESOLVED for r in group),
            errors=sum(r.status == Status.ERROR for r in group),
            fail_to_pass=sum(r.fail_to_pass_fraction for r in group) / len(group),
        )
        for repo, group in sorted(grouped.items())
    ]


@dataclass(frozen=True)
class LabelRow:
    """The instances of one SWE-bench 5.0 failure label."""

    label: str
    tier: str  # environment, ambiguous
    instance_ids: tuple[str, ...]

    @property
    def count(self) -> int:
        return len(self.instance_ids)


def label_counts(results: list[InstanceResult]) -> list[LabelRow]:
    """The results not resolved by their SWE-bench 5.0 failure label, in the labels' order
    (environment first); unlabelled ones are left out."""
    grouped: dict[FailureLabel, list[str]] = defaultdict(list)
    for result in results:
        if result.failure_label is not None and result.status != Status.RESOLVED:
            grouped[result.failure_label].append(result.instance_id)
    return [
        LabelRow(label.value, tier(label), tuple(sorted(grouped[label])))
        for label in FailureLabel
        if label in grouped
    ]


def reason_text(result: InstanceResult) -> str:
    """The result's reason, with its SWE-bench 5.0 failure label when it has one."""
    reason = result.reason.value
    if result.failure_label is None:
        return reason
    return f"{reason} [{result.failure_label.value}]" if reason else result.failure_label.value


def flaky_note(result: InstanceResult) -> str:
    """Why ``result`` is marked ``~``: each flaky test and the outcomes seen, first graded."""
    tests = "; ".join(
        f"{name}: {' '.join(outcomes)}" for name, outcomes in sorted(result.flaky_tests.items())
    )
    return f"{result.verdict}: a deciding test changed its outcome when re-run ({tests})"


# --------------------------------------------------------------------------- triage

# what tells causes apart stays as written: URLs, HTTP statuses, versions, owner/name
_KEEP = re.compile(
    r"\bhttps?://[^\s'\"<>()]+[^\s'\"<>().,;:]"  # a URL (host and port say where)
    r"|\bHTTP(?:\s+status)?\s+\d{3}\b"  # HTTP 500
    r"|\b[Pp]ython\s*\d+(?:\.\d+)*"  # Python 3.9
    r"|\bversions?\s+['\"]?[\w.+-]+['\"]?"  # version '5.0'
    r"|(?<![\w./<-])[A-Za-z][\w.-]*/[A-Za-z][\w.-]*(?![\w/])"  # owner/name (two parts)
)
_NORMALISE = [
    # instance ids (owner__name-123): one per instance
    (re.compile(r"\b[\w.-]+__[\w.-]+-\d+\b"), "<instance>"),
    # paths: absolute ones, and relative ones with at least two parts (a/b.py)
    (re.compile(r"(?<![\w<])(?:/[\w.+~@-]+)+/?|\b[\w.+~@-]+(?:/[\w.+~@-]+)+/?"), "<path>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<hex>"),
    # hashes: 7+ hex digits with at least one digit (commit, container and image ids)
    (re.compile(r"\b(?:sha256:)?(?=[0-9a-f]*\d)[0-9a-f]{7,}\b"), "<hash>"),
    (re.compile(r"(?<![\w<])\d+(?:\.\d+)*"), "<n>"),
    (re.compile(r"\s+"), " "),
]
MESSAGE_WIDTH = 160
_HELD = 0xE000


def normalise_message(message: str) -> str:
    """The first non-empty line of ``message`` with what differs per instance folded (ids,
    paths, hashes, numbers), so that the same root cause in different instances reads the
    same; what tells causes apart stays (URLs, HTTP statuses, versions, repositories)."""
    line = next((ln.strip() for ln in message.splitlines() if ln.strip()), "")
    kept: list[str] = []

    def hold(match: re.Match[str]) -> str:
        kept.append(match[0])
        return chr(_HELD + len(kept) - 1)  # a private-use character: no pattern matches it

    line = _NORMALISE[0][0].sub(_NORMALISE[0][1], line)  # ids first: they look like paths
    line = _KEEP.sub(hold, line)
    for pattern, replacement in _NORMALISE[1:]:
        line = pattern.sub(replacement, line)
    line = "".join(kept[ord(c) - _HELD] if _HELD <= ord(c) < _HELD + len(kept) else c for c in line)
    line = line.strip()
    return line if len(line) <= MESSAGE_WIDTH else line[: MESSAGE_WIDTH - 1] + "…"


@dataclass(frozen=True)
class TriageRow:
    """Errors of one reason whose messages normalise to the same line."""

    reason: str
    message: str
    instance_ids: tuple[str, ...]

    @property
    def count(self) -> int:
        return len(self.instance_ids)


def triage(results: list[InstanceResult]) -> list[TriageRow]:
    """The ``error`` results grouped by reason and normalised message, most frequent first."""
    grouped: dict[tuple[str, str], list[str]] = defaultdict(list)
    for result in results:
        if result.status == Status.ERROR:
            key = (result.reason.value or "unknown", normalise_message(result.message))
            grouped[key].append(result.instance_id)
    rows = [
        TriageRow(reason, message, tuple(sorted(ids))) for (reason, message), ids in grouped.items()
    ]
    return sorted(rows, key=lambda row: (-row.count, row.reason, row.message))


# --------------------------------------------------------------------------- comparison


@dataclass(frozen=True)
class StatusChange:
    instance_id: str
    repo: str
    before: Status
    after: Status
    reason: str  # why the status changed (:func:`change_reason`)


@dataclass(frozen=True)
class RepoDelta:
    repo: str
    instances: int  # in both runs
    resolved_before: int
    resolved_after: int
    errors_before: int
    errors_after: int

    @property
    def delta(self) -> int:
        return self.resolved_after - self.resolved_before


def _first_line(message: str) -> str:
    return next((line.strip() for line in message.splitlines() if line.strip()), "")


def _listed(names: list[str], limit: int = 3) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" (+{len(names) - limit} more)" if len(names) > limit else "")


# reasons that say the patch was not graded as written: its tests' outcomes are not why
NOT_GRADED_AS_WRITTEN = (
    Reason.EMPTY_PATCH, Reason.PATCH_APPLY_FAILED, Reason.PATCH_PATH_REFUSED,
    Reason.REINSTALL_REFUSED, Reason.TAMPER_DETECTED, Reason.TEST_OUTPUT_FORGED,
)  # fmt: skip


def change_reason(old: InstanceResult, new: InstanceResult) -> str:
    """Why ``new``'s status differs from ``old``'s, in one line: an error's reason and first
    line, a patch not graded as written (an empty one, one that does not apply, ...), the
    tests that stopped or started passing, else the reason recorded now."""
    if new.status == Status.ERROR or new.reason in NOT_GRADED_AS_WRITTEN:
        return f"{new.reason.value or 'error'}: {_first_line(new.message)}".rstrip(": ")
    if old.status == Status.ERROR:
        return f"no longer an error (was {old.reason.value or 'error'})"
    before, after = old.tests, new.tests
    was_passing = set(before.fail_to_pass_passed) | set(before.pass_to_pass_passed)
    was_failing = set(before.fail_to_pass_failed) | set(before.pass_to_pass_failed)
    now_failing = [*after.fail_to_pass_failed, *after.pass_to_pass_failed]
    now_passing = [*after.fail_to_pass_passed, *after.pass_to_pass_passed]
    parts = []
    broke = [name for name in now_failing if name in was_passing]
    fixed = [name for name in now_passing if name in was_failing]
    if broke:
        parts.append(f"now failing: {_listed(broke)}")
    if fixed:
        parts.append(f"now passing: {_listed(fixed)}")
    if not parts and new.reason.value:
        parts.append(new.reason.value)
    if not parts and (old.reduced_tests or new.reduced_tests):
        parts.append("the tests left out by validation differ")
    return "; ".join(parts)


# the leaderboard row's shares, in the order the report shows them
ROW_FIELDS = (
    "resolved_pct", *(f"{s.value}_pct" for s in Status if s != Status.RESOLVED),
    "fail_to_pass_passed_pct", "pass_to_pass_passed_pct",
)  # fmt: skip


@dataclass(frozen=True)
class Comparison:
    """A run against a baseline run, over the instances both evaluated."""

    run: str
    baseline: str
    common: tuple[str, ...]
    only_in_run: tuple[str, ...]
    only_in_baseline: tuple[str, ...]
    lost: tuple[StatusChange, ...]  # resolved in the baseline, not in the run
    gained: tuple[StatusChange, ...]  # resolved in the run, not in the baseline
    changed: tuple[StatusChange, ...]  # other status changes
    new_errors: tuple[TriageRow, ...]  # errors in the run that were not errors before
    fixed_errors: tuple[str, ...]  # errors in the baseline that are not errors now
    repos: tuple[RepoDelta, ...]
    row_before: LeaderboardRow
    row_after: LeaderboardRow

    @property
    def regressed(self) -> bool:
        """An instance lost its resolution, or a new error appeared."""
        return bool(self.lost or self.new_errors)

    @property
    def same_selection(self) -> bool:
        return not self.only_in_run and not self.only_in_baseline

    def row_delta(self) -> list[tuple[str, float, float, float]]:
        """(field, baseline, run, run − baseline) for each share of the leaderboard row."""
        return [
            (name, getattr(self.row_before, name), getattr(self.row_after, name),
             getattr(self.row_after, name) - getattr(self.row_before, name))
            for name in ROW_FIELDS
        ]  # fmt: skip


def compare(
    results: list[InstanceResult],
    baseline: list[InstanceResult],
    run_name: str = "run",
    baseline_name: str = "baseline",
) -> Comparison:
    """Compare ``results`` with ``baseline`` on the instances both hold."""
    now = {r.instance_id: r for r in results}
    before = {r.instance_id: r for r in baseline}
    common = sorted(now.keys() & before.keys())
    lost, gained, changed = [], [], []
    for instance_id in common:
        old, new = before[instance_id], now[instance_id]
        if old.status == new.status:
            continue
        change = StatusChange(
            instance_id, repo_of(new), old.status, new.status, change_reason(old, new)
        )
        if old.status == Status.RESOLVED:
            lost.append(change)
        elif new.status == Status.RESOLVED:
            gained.append(change)
        else:
            changed.append(change)
    newly_failed = [
        now[i] for i in common if now[i].status == Status.ERROR and before[i].status != Status.ERROR
    ]
    fixed = [
        i for i in common if before[i].status == Status.ERROR and now[i].status != Status.ERROR
    ]
    rows_before = {row.repo: row for row in per_repository([before[i] for i in common])}
    rows_after = {row.repo: row for row in per_repository([now[i] for i in common])}
    repos = [
        RepoDelta(
            repo,
            rows_after[repo].instances,
            rows_before[repo].resolved,
            rows_after[repo].resolved,
            rows_before[repo].errors,
            rows_after[repo].errors,
        )  # fmt: skip
        for repo in sorted(rows_after.keys() & rows_before.keys())
    ]
    return Comparison(
        run=run_name,
        baseline=baseline_name,
        common=tuple(common),
        only_in_run=tuple(sorted(now.keys() - before.keys())),
        only_in_baseline=tuple(sorted(before.keys() - now.keys())),
        lost=tuple(lost),
        gained=tuple(gained),
        changed=tuple(changed),
        new_errors=tuple(triage(newly_failed)),
        fixed_errors=tuple(fixed),
        repos=tuple(repos),
        row_before=aggregate([before[i] for i in common]),
        row_after=aggregate([now[i] for i in common]),
    )


def compare_runs(
    run_dir: RunDir | str | os.PathLike[str], baseline_dir: RunDir | str | os.PathLike[str]
) -> Comparison:
    """:func:`compare` of two run directories."""
    run, results = load_run(run_dir)
    base, baseline = load_run(baseline_dir)
    return compare(results, baseline, run.path.name, base.path.name)


def load_run(run_dir: RunDir | str | os.PathLike[str]) -> tuple[RunDir, list[InstanceResult]]:
    run = run_dir if isinstance(run_dir, RunDir) else RunDir(run_dir)
    return run, run.load_results()


def public_config(config: dict[str, Any]) -> list[tuple[str, str]]:
    """Scalar settings worth showing; anything that looks like a secret is left out."""
    return [
        (key, str(value))
        for key, value in config.items()
        if isinstance(value, str | int | float | bool) and not _SECRET_KEY.search(key)
    ]
