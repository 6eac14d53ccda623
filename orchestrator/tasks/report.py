"""The report of a repository's tasks (``tasks.md`` beside the dataset): candidates,
kept, rejected by reason (at collection and at validation), environments built, time, the
tasks a month of history gives (candidates a month times the share kept), and how many
tasks are newer than a given date."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

from pydantic import BaseModel, Field

from orchestrator.models import Instance
from orchestrator.tasks.collect import CollectReport
from orchestrator.tasks.validate import TaskRecord


class RepoTasks(BaseModel):
    """One repository's figures."""

    repo: str
    changes: int = 0
    candidates: int = 0
    validated: int = 0  # candidates with a record
    kept: int = 0
    rejected_at_collection: dict[str, int] = Field(default_factory=dict)
    rejected_at_validation: dict[str, int] = Field(default_factory=dict)
    environments: int = 0  # environments (versions) among the validated candidates
    environments_built: int = 0  # of those, environments that built
    environments_validating: int = 0  # of those, environments that kept a task
    statement_sources: dict[str, int] = Field(default_factory=dict)  # of the candidates
    collect_seconds: float = 0.0
    validate_seconds: float = 0.0
    newer: int = 0  # kept tasks created after the report's date
    months: float = 0.0  # the months the changes looked at span (0: unknown)

    @property
    def seconds_per_kept(self) -> float:
        return self.validate_seconds / self.kept if self.kept else 0.0

    @property
    def kept_a_month(self) -> float | None:
        """The tasks a month of the repository's history gives: its candidates a month times
        the share of the validated candidates kept (None: no span or nothing validated)."""
        if not (self.months and self.validated):
            return None
        return self.candidates / self.months * self.kept / self.validated


def reason_class(record: TaskRecord) -> str:
    """A rejected candidate's reason, as a category (the message's detail left out)."""
    if record.cause:
        return f"{record.stage}: {record.cause}"
    return record.reason.split(":")[0][:80]


def repo_tasks(
    collected: CollectReport,
    records: list[TaskRecord],
    tasks: list[Instance],
    newer_than: datetime | None = None,
) -> RepoTasks:
    """The figures of one repository: its collection, its candidates' records, its kept tasks."""
    versions: dict[str, list[TaskRecord]] = {}
    for record in records:
        versions.setdefault(record.version, []).append(record)
    built = [v for v, rs in versions.items() if any(r.stage != "setup" for r in rs)]
    return RepoTasks(
        repo=collected.repo, changes=collected.changes, candidates=collected.candidates,
        validated=len(records), kept=sum(r.kept for r in records),
        rejected_at_collection=collected.by_reason(),
        rejected_at_validation=dict(
            Counter(reason_class(r) for r in records if not r.kept).most_common()
        ),
        environments=len(versions), environments_built=len(built),
        environments_validating=sum(any(r.kept for r in versions[v]) for v in built),
        statement_sources=collected.statement_sources,
        collect_seconds=collected.seconds,
        validate_seconds=round(sum(r.seconds for r in records), 1),
        newer=sum(_newer(t, newer_than) for t in tasks) if newer_than else 0,
        months=round(months_spanned(collected), 2),
    )  # fmt: skip


def months_spanned(collected: CollectReport) -> float:
    """The months the changes a collection looked at span (0: unknown)."""
    if not (collected.first and collected.last):
        return 0.0
    seconds = (parse_time(collected.last) - parse_time(collected.first)).total_seconds()
    return max(seconds, 0.0) / (86400 * 365.25 / 12)


def _newer(task: Instance, when: datetime) -> bool:
    return bool(task.created_at) and parse_time(task.created_at or "") > when


def parse_time(text: str) -> datetime:
    """An ISO 8601 time (``Z`` allowed); a bare date is its midnight, UTC."""
    moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def markdown(repos: list[RepoTasks], newer_than: datetime | None) -> str:
    """The report as a Markdown page."""
    lines = [
        "| repository | changes | candidates | validated | kept "
        "| environments (built, keeping a task) | s per kept task | months "
        "| kept a month (est.) |" + (f" newer than {newer_than:%Y-%m-%d} |" if newer_than else ""),
        "|---|---:|---:|---:|---:|---|---:|---:|---:|" + ("---:|" if newer_than else ""),
    ]
    for r in repos:
        rate = "-" if r.kept_a_month is None else f"{r.kept_a_month:.1f}"
        lines.append(
            f"| {r.repo} | {r.changes} | {r.candidates} | {r.validated} | {r.kept} | "
            f"{r.environments} ({r.environments_built}, {r.environments_validating}) | "
            f"{r.seconds_per_kept:.0f} | {r.months:.1f} | {rate} |"
            + (f" {r.newer} |" if newer_than else "")
        )
    for r in repos:
        lines += [
            "",
            f"**{r.repo}** (collected in {r.collect_seconds:.1f} s; statements from: "
            f"{_counts(r.statement_sources)}): rejected at collection: "
            + _counts(r.rejected_at_collection),
        ]
        lines.append(f"rejected at validation: {_counts(r.rejected_at_validation)}")
    return "\n".join(lines) + "\n"


def _counts(counts: dict[str, int]) -> str:
    return "; ".join(f"{reason} ({n})" for reason, n in counts.items()) or "none"


def totals(repos: list[RepoTasks]) -> str:
    """One paragraph of the figures over every repository."""
    validated = sum(r.validated for r in repos)
    kept = sum(r.kept for r in repos)
    envs = sum(r.environments for r in repos)
    built = sum(r.environments_built for r in repos)
    keeping = sum(r.environments_validating for r in repos)
    seconds = sum(r.validate_seconds for r in repos)
    share = f"{kept / validated:.0%}" if validated else "-"
    return (
        f"{len(repos)} repositories, {sum(r.changes for r in repos)} changes, "
        f"{sum(r.candidates for r in repos)} candidates; {validated} validated, {kept} kept "
        f"({share}); environments: {envs}, {built} built, {keeping} keeping a task; "
        f"{seconds / 3600:.2f} h of validation, {seconds / kept if kept else 0:.0f} s per kept task"
    )
