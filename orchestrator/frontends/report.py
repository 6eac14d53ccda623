"""Reports of a run directory: rich text for the terminal, one self-contained HTML file.

An instance's duration is its ``timings["total"]`` when present, else the sum of its phase
timings.
"""

from __future__ import annotations

import html
import os
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from orchestrator.grading.classify import LeaderboardRow, aggregate
from orchestrator.models import InstanceResult, Status
from orchestrator.run.results import INSTANCES_DIR, RESULT_FILE, RunDir, atomic_write_text

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
_RICH_STYLES = {
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


def _pct(fraction: float) -> str:
    return f"{fraction * 100:.2f}%"


def _fraction_text(passed: int, failed: int) -> str:
    return f"{passed}/{passed + failed}"


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


# --------------------------------------------------------------------------- triage

_NORMALISE = [
    # paths: absolute ones, and relative ones with at least two parts (a/b.py)
    (re.compile(r"(?<![\w<])(?:/[\w.+~@-]+)+/?|\b[\w.+~@-]+(?:/[\w.+~@-]+)+/?"), "<path>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<hex>"),
    # hashes: 7+ hex digits with at least one digit (commit, container and image ids)
    (re.compile(r"\b(?:sha256:)?(?=[0-9a-f]*\d)[0-9a-f]{7,}\b"), "<hash>"),
    (re.compile(r"(?<![\w<])\d+(?:\.\d+)*"), "<n>"),
    (re.compile(r"\s+"), " "),
]
MESSAGE_WIDTH = 160


def normalise_message(message: str) -> str:
    """The first non-empty line of ``message`` with paths, hashes and numbers collapsed, so
    that the same root cause in different instances reads the same."""
    line = next((ln.strip() for ln in message.splitlines() if ln.strip()), "")
    for pattern, replacement in _NORMALISE:
        line = pattern.sub(replacement, line)
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
    reason: str  # the reason now (errors), else ""


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
            instance_id, repo_of(new), old.status, new.status,
            new.reason.value if new.status == Status.ERROR else "",
        )  # fmt: skip
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
    run, results = _load(run_dir)
    base, baseline = _load(baseline_dir)
    return compare(results, baseline, run.path.name, base.path.name)


def _load(run_dir: RunDir | str | os.PathLike[str]) -> tuple[RunDir, list[InstanceResult]]:
    run = run_dir if isinstance(run_dir, RunDir) else RunDir(run_dir)
    return run, run.load_results()


def _public_config(config: dict[str, Any]) -> list[tuple[str, str]]:
    """Scalar settings worth showing; anything that looks like a secret is left out."""
    return [
        (key, str(value))
        for key, value in config.items()
        if isinstance(value, str | int | float | bool) and not _SECRET_KEY.search(key)
    ]


# --------------------------------------------------------------------------- text


# gold-relative grading leaves out PASS_TO_PASS tests that fail with the gold patch; past this
# share an instance is flagged, so that a broken environment cannot hide a regression
P2P_EXCLUDED_FLAG = 0.10


def caveats(results: list[InstanceResult]) -> list[tuple[str, str]]:
    """(instance, why) for results a person should look at before trusting them: many
    PASS_TO_PASS tests left out of grading, or a Python other than the spec's."""
    notes = []
    for result in sorted(results, key=lambda r: r.instance_id):
        tests = result.tests
        excluded = len(tests.pass_to_pass_excluded)
        total = excluded + len(tests.pass_to_pass_passed) + len(tests.pass_to_pass_failed)
        if total and excluded / total > P2P_EXCLUDED_FLAG:
            notes.append(
                (
                    result.instance_id,
                    f"{excluded} of {total} PASS_TO_PASS tests left out of grading",
                )
            )
        spec, used = result.python_spec, result.python_used
        if spec and used and not (used == spec or used.startswith(spec + ".")):
            notes.append((result.instance_id, f"ran on Python {used}; the spec asks for {spec}"))
    return notes


def render_text(run_dir: RunDir | str | os.PathLike[str], slowest: int = 10) -> Group:
    """The run's report as rich renderables: leaderboard row, statuses, repositories,
    slowest instances. Print it with ``rich.console.Console().print(...)``."""
    run, results = _load(run_dir)
    row = aggregate(results)

    headline = Table(title=f"Run {run.path.name}", show_header=True)
    for column in ("instances", "resolved", "fail→pass", "pass→pass", "error"):
        headline.add_column(column, justify="right")
    headline.add_row(
        str(row.total_instances),
        _pct(row.resolved_pct),
        _pct(row.fail_to_pass_passed_pct),
        _pct(row.pass_to_pass_passed_pct),
        _pct(row.error_pct),
    )

    statuses = Table(title="Statuses")
    statuses.add_column("status")
    statuses.add_column("instances", justify="right")
    statuses.add_column("share", justify="right")
    for status in STATUS_ORDER:
        count = getattr(row, f"{status.value}_count")
        share = getattr(row, f"{status.value}_pct")
        statuses.add_row(Text(status.value, style=_RICH_STYLES[status]), str(count), _pct(share))

    repos = Table(title="Repositories")
    repos.add_column("repository")
    for column in ("instances", "resolved", "resolved %", "fail→pass", "errors"):
        repos.add_column(column, justify="right")
    for repo in per_repository(results):
        repos.add_row(
            repo.repo,
            str(repo.instances),
            str(repo.resolved),
            _pct(repo.resolved_fraction),
            _pct(repo.fail_to_pass),
            str(repo.errors),
        )

    slow = Table(title=f"Slowest {slowest} instances")
    slow.add_column("instance")
    slow.add_column("status")
    slow.add_column("duration", justify="right")
    slow.add_column("tool calls", justify="right")
    for result in sorted(results, key=duration, reverse=True)[:slowest]:
        slow.add_row(
            result.instance_id,
            Text(result.status.value, style=_RICH_STYLES[result.status]),
            format_seconds(duration(result)),
            str(result.tool_calls),
        )

    parts: list[RenderableType] = [headline, statuses]
    causes = triage(results)
    if causes:
        parts.append(_triage_table("Errors by cause", causes))
    parts += [repos, slow]
    notes = caveats(results)
    if notes:
        table = Table(title="Caveats (look before trusting these)")
        table.add_column("instance")
        table.add_column("why")
        for instance_id, why in notes:
            table.add_row(instance_id, why)
        parts.append(table)
    flagged = [result for result in results if result.suspicious]
    if flagged:
        suspicious = Table(title="Suspicious: resolved, but the patch touches the test runner")
        suspicious.add_column("instance")
        suspicious.add_column("why a person should look", overflow="fold")
        for result in flagged:
            suspicious.add_row(result.instance_id, "; ".join(result.suspicious))
        parts.append(suspicious)
    if not results:
        parts.insert(0, Text(f"No instance results in {run.path}", style="yellow"))
    return Group(*parts)


def _triage_table(title: str, rows: list[TriageRow] | tuple[TriageRow, ...]) -> Table:
    table = Table(title=title)
    table.add_column("n", justify="right")
    table.add_column("reason", style="magenta")
    table.add_column("first line of the message (normalised)", overflow="fold")
    table.add_column("instances", overflow="fold")
    for row in rows:
        table.add_row(str(row.count), row.reason, row.message, ", ".join(row.instance_ids))
    return table


def _signed(value: float, pct: bool = True) -> str:
    if pct:
        return f"{value * 100:+.2f} pp" if value else "0"
    return f"{value:+d}" if value else "0"


def _status_text(status: Status) -> Text:
    return Text(status.value, style=_RICH_STYLES[status])


def render_comparison(comparison: Comparison) -> Group:
    """A comparison as rich renderables: verdict, row delta, status changes, new errors,
    repositories."""
    c = comparison
    parts: list[RenderableType] = []
    scope = f"{len(c.common)} instance(s) in both runs"
    if not c.same_selection:
        scope += (
            f"; the selections differ ({len(c.only_in_run)} only in {c.run}, "
            f"{len(c.only_in_baseline)} only in {c.baseline}): compared on the intersection"
        )
    parts.append(Text(f"Run {c.run} against {c.baseline}: {scope}", style="bold"))
    if c.regressed:
        parts.append(
            Text(
                f"REGRESSED: {len(c.lost)} instance(s) no longer resolved, "
                f"{sum(row.count for row in c.new_errors)} new error(s)",
                style="bold red",
            )
        )
    else:
        parts.append(Text("no regression", style="bold green"))
    parts.append(
        Text(
            f"{len(c.gained)} newly resolved, {len(c.lost)} no longer resolved, "
            f"{len(c.changed)} other status change(s), {len(c.fixed_errors)} error(s) gone"
        )
    )
    delta = Table(title="Leaderboard row (common instances)")
    delta.add_column("share")
    for column in (c.baseline, c.run, "delta"):
        delta.add_column(column, justify="right", overflow="fold")
    for name, before, after, change in c.row_delta():
        style = _delta_style(name, change)
        delta.add_row(
            name.removesuffix("_pct"), _pct(before), _pct(after), Text(_signed(change), style)
        )
    parts.append(delta)
    for title, changes in (
        ("Resolved → not resolved", c.lost),
        ("Not resolved → resolved", c.gained),
        ("Other status changes", c.changed),
    ):
        if not changes:
            continue
        table = Table(title=title)
        for column in ("instance", "repository", c.baseline, c.run, "reason"):
            table.add_column(column, overflow="fold")
        for change in changes:
            table.add_row(
                change.instance_id, change.repo, _status_text(change.before),
                _status_text(change.after), change.reason,
            )  # fmt: skip
        parts.append(table)
    if c.new_errors:
        parts.append(_triage_table("New errors by cause", c.new_errors))
    repos = Table(title="Repositories (common instances)")
    repos.add_column("repository")
    for column in ("instances", f"resolved {c.baseline}", f"resolved {c.run}", "delta", "errors"):
        repos.add_column(column, justify="right", overflow="fold")
    for repo in c.repos:
        style = "" if not repo.delta else ("green" if repo.delta > 0 else "red")
        repos.add_row(
            repo.repo, str(repo.instances), str(repo.resolved_before), str(repo.resolved_after),
            Text(_signed(repo.delta, pct=False), style),
            f"{repo.errors_before} → {repo.errors_after}",
        )  # fmt: skip
    parts.append(repos)
    return Group(*parts)


_BETTER_UP = ("resolved_pct", "fail_to_pass_passed_pct", "pass_to_pass_passed_pct")
_WORSE_UP = ("error_pct", "regression_pct", "no_op_pct")


def _delta_style(field: str, change: float) -> str:
    """green for a change for the better, red for the worse, none when it depends (also the
    HTML class: better, worse)."""
    if not change or field not in _BETTER_UP + _WORSE_UP:
        return ""
    return "green" if (change > 0) == (field in _BETTER_UP) else "red"


def print_report(
    run_dir: RunDir | str | os.PathLike[str], console: Console | None = None, slowest: int = 10
) -> None:
    """Print :func:`render_text` to ``console`` (default: standard output)."""
    (console or Console()).print(render_text(run_dir, slowest=slowest))


# --------------------------------------------------------------------------- HTML

_CSS = """
:root { font-family: system-ui, sans-serif; color: #1d2330; background: #fff; }
body { margin: 1.5rem auto; max-width: 1400px; padding: 0 1rem; }
h1 { font-size: 1.4rem; margin-bottom: .25rem; }
h2 { font-size: 1.1rem; margin-top: 2rem; }
.muted { color: #666; }
table { border-collapse: collapse; font-size: .9rem; }
th, td { padding: .3rem .6rem; border-bottom: 1px solid #e3e5ea; text-align: left;
  vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
table.sortable th { cursor: pointer; user-select: none; white-space: nowrap; }
table.sortable th[aria-sort="ascending"]::after { content: " \\25B2"; }
table.sortable th[aria-sort="descending"]::after { content: " \\25BC"; }
.suspicious { color: #b45309; font-weight: 600; cursor: help; }
.status { display: inline-block; padding: 0 .45rem; border-radius: .6rem; color: #fff;
  font-size: .8rem; white-space: nowrap; }
.message { max-width: 28rem; overflow-wrap: anywhere; }
td.id { white-space: nowrap; }
.links a { margin-right: .4rem; white-space: nowrap; }
dl.config { display: grid; grid-template-columns: max-content 1fr; gap: .1rem 1rem;
  font-size: .85rem; }
dl.config dt { color: #666; }
dl.config dd { margin: 0; overflow-wrap: anywhere; }
.green, .better { color: #2e9d4f; } .red, .worse { color: #c8412f; }
#verdict { font-weight: bold; } #verdict.regressed { color: #c8412f; }
#verdict.ok { color: #2e9d4f; }
"""

_JS = """
(function () {
  const table = document.getElementById("instances");
  if (!table) return;
  const tbody = table.tBodies[0];
  const headers = Array.from(table.tHead.rows[0].cells);
  function value(cell, numeric) {
    const raw = cell.dataset.sort !== undefined ? cell.dataset.sort : cell.textContent.trim();
    if (!numeric) return raw.toLowerCase();
    const number = parseFloat(raw);
    return isNaN(number) ? -Infinity : number;
  }
  function sortBy(key, direction) {
    const index = headers.findIndex((h) => h.dataset.key === key);
    if (index < 0) return;
    const numeric = headers[index].dataset.type === "num";
    const rows = Array.from(tbody.rows);
    rows.sort((a, b) => {
      const x = value(a.cells[index], numeric), y = value(b.cells[index], numeric);
      return (x < y ? -1 : x > y ? 1 : 0) * direction;
    });
    rows.forEach((row) => tbody.appendChild(row));
    headers.forEach((h) => h.removeAttribute("aria-sort"));
    headers[index].setAttribute("aria-sort", direction > 0 ? "ascending" : "descending");
    table.dataset.sortedBy = (direction < 0 ? "-" : "") + key;
  }
  headers.forEach((header) => {
    header.addEventListener("click", () => {
      const direction = table.dataset.sortedBy === header.dataset.key ? -1 : 1;
      sortBy(header.dataset.key, direction);
      history.replaceState(null, "", "#sort=" + (direction < 0 ? "-" : "") + header.dataset.key);
    });
  });
  const wanted = location.hash.match(/^#sort=(-?)([a-z0-9_]+)$/);
  if (wanted) sortBy(wanted[2], wanted[1] ? -1 : 1);
})();
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _status_badge(status: Status) -> str:
    return (
        f'<span class="status" style="background:{STATUS_COLOURS[status]}">'
        f"{_e(status.value)}</span>"
    )


def _status_chart(row: LeaderboardRow) -> str:
    """A horizontal bar per status, as inline SVG."""
    bar_width, row_height, label_width = 420, 24, 150
    height = row_height * len(STATUS_ORDER) + 4
    parts = [
        f'<svg id="status-chart" role="img" aria-label="instances per status" '
        f'width="{label_width + bar_width + 140}" height="{height}">'
    ]
    for i, status in enumerate(STATUS_ORDER):
        count = getattr(row, f"{status.value}_count")
        share = getattr(row, f"{status.value}_pct")
        y = i * row_height + 2
        width = round(bar_width * share, 1)
        parts.append(
            f'<g data-status="{_e(status.value)}">'
            f'<text x="0" y="{y + 16}" font-size="13">{_e(status.value)}</text>'
            f'<rect x="{label_width}" y="{y + 3}" width="{bar_width}" height="16" '
            f'fill="#f0f1f4"/>'
            f'<rect x="{label_width}" y="{y + 3}" width="{width}" height="16" '
            f'fill="{STATUS_COLOURS[status]}"><title>{_e(status.value)}: {count}</title></rect>'
            f'<text x="{label_width + bar_width + 8}" y="{y + 16}" font-size="13">'
            f"{count} ({_pct(share)})</text></g>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _links(run: RunDir, result: InstanceResult) -> str:
    instance_dir = run.path / INSTANCES_DIR / result.instance_id
    links = []
    for name in INSTANCE_FILES:
        if (instance_dir / name).is_file():
            href = f"{INSTANCES_DIR}/{quote(result.instance_id)}/{quote(name)}"
            links.append(f'<a href="{_e(href)}">{_e(name)}</a>')
    for label, log_path in sorted(result.logs.items()):
        target = Path(log_path)
        if not target.is_absolute():
            target = instance_dir / target
        try:
            relative = target.resolve().relative_to(run.path.resolve())
        except ValueError:
            continue  # outside the run directory: not linkable from the report
        href = "/".join(quote(part) for part in relative.parts)
        if target.is_file() and target.name not in INSTANCE_FILES:
            links.append(f'<a href="{_e(href)}">{_e(label)}</a>')
    return " ".join(links)


def _instance_row(run: RunDir, result: InstanceResult) -> str:
    tests = result.tests
    f_passed, f_failed = len(tests.fail_to_pass_passed), len(tests.fail_to_pass_failed)
    p_passed, p_failed = len(tests.pass_to_pass_passed), len(tests.pass_to_pass_failed)
    seconds = duration(result)
    timings = ", ".join(f"{k} {format_seconds(v)}" for k, v in result.timings.items())
    message = result.message if len(result.message) <= 300 else result.message[:297] + "..."
    cells = [
        f'<td class="id">{_e(result.instance_id)}</td>',
        f"<td>{_e(repo_of(result))}</td>",
        f'<td data-sort="{STATUS_ORDER.index(result.status)}">{_status_badge(result.status)}'
        + (
            f' <span class="suspicious" title="{_e("; ".join(result.suspicious))}">'
            "suspicious</span>"
            if result.suspicious
            else ""
        )
        + "</td>",
        f"<td>{_e(result.reason.value)}</td>",
        f'<td class="num" data-sort="{result.fail_to_pass_fraction:.6f}">'
        f"{_fraction_text(f_passed, f_failed)}</td>",
        f'<td class="num" data-sort="{result.pass_to_pass_fraction:.6f}">'
        f"{_fraction_text(p_passed, p_failed)}"
        + (f" (+{len(tests.pass_to_pass_excluded)} excl.)" if tests.pass_to_pass_excluded else "")
        + "</td>",
        f'<td class="num" data-sort="{seconds:.3f}" title="{_e(timings)}">'
        f"{_e(format_seconds(seconds))}</td>",
        f'<td class="num">{result.tool_calls}</td>',
        f"<td>{_e(result.apply_strategy or '')}</td>",
        f'<td class="message">{_e(message)}</td>',
        f'<td class="links">{_links(run, result)}</td>',
    ]
    return (
        f'<tr id="{_e(_anchor(result.instance_id))}" data-instance="{_e(result.instance_id)}">'
        + "".join(cells)
        + "</tr>"
    )


def _anchor(instance_id: str) -> str:
    return f"i-{instance_id}"


def _instance_links(instance_ids: tuple[str, ...], local: set[str]) -> str:
    """Links to the instances' rows of this report (plain ids for those not in it)."""
    return ", ".join(
        f'<a href="#{_e(quote(_anchor(i)))}">{_e(i)}</a>' if i in local else _e(i)
        for i in instance_ids
    )


def _triage_html(
    table_id: str, rows: tuple[TriageRow, ...] | list[TriageRow], local: set[str]
) -> str:
    return "".join(
        [
            f'<table id="{table_id}"><thead><tr><th class=num>n</th><th>reason</th>'
            "<th>first line of the message (normalised)</th><th>instances</th></tr></thead><tbody>",
            *(
                f'<tr data-reason="{_e(row.reason)}"><td class=num>{row.count}</td>'
                f"<td>{_e(row.reason)}</td><td class=message>{_e(row.message)}</td>"
                f"<td>{_instance_links(row.instance_ids, local)}</td></tr>"
                for row in rows
            ),
            "</tbody></table>",
        ]
    )


def _comparison_html(c: Comparison, local: set[str]) -> str:
    scope = f"{len(c.common)} instance(s) in both runs"
    if not c.same_selection:
        scope += (
            f"; the selections differ ({len(c.only_in_run)} only in {c.run}, "
            f"{len(c.only_in_baseline)} only in {c.baseline}): compared on the intersection"
        )
    verdict = (
        f'<p id="verdict" class="regressed">Regressed: {len(c.lost)} instance(s) no longer '
        f"resolved, {sum(row.count for row in c.new_errors)} new error(s).</p>"
        if c.regressed
        else '<p id="verdict" class="ok">No regression.</p>'
    )
    delta_rows = "".join(
        f"<tr><td>{_e(name.removesuffix('_pct'))}</td><td class=num>{_pct(before)}</td>"
        f"<td class=num>{_pct(after)}</td>"
        f'<td class="num {_delta_style(name, change)}">{_e(_signed(change))}</td></tr>'
        for name, before, after, change in c.row_delta()
    )
    parts = [
        f"<h2>Compared with {_e(c.baseline)}</h2>",
        f'<p class="muted">{_e(scope)}</p>',
        verdict,
        f'<table id="row-delta"><thead><tr><th>share</th><th class=num>{_e(c.baseline)}</th>'
        f"<th class=num>{_e(c.run)}</th><th class=num>delta</th></tr></thead>"
        f"<tbody>{delta_rows}</tbody></table>",
    ]
    for table_id, title, changes in (
        ("lost", "Resolved → not resolved", c.lost),
        ("gained", "Not resolved → resolved", c.gained),
        ("changed", "Other status changes", c.changed),
    ):
        if not changes:
            continue
        rows = "".join(
            f"<tr><td>{_instance_links((ch.instance_id,), local)}</td><td>{_e(ch.repo)}</td>"
            f"<td>{_status_badge(ch.before)}</td><td>{_status_badge(ch.after)}</td>"
            f"<td>{_e(ch.reason)}</td></tr>"
            for ch in changes
        )
        parts.append(
            f'<h3>{_e(title)}</h3><table id="{table_id}"><thead><tr><th>instance</th>'
            f"<th>repository</th><th>{_e(c.baseline)}</th><th>{_e(c.run)}</th><th>reason</th>"
            f"</tr></thead><tbody>{rows}</tbody></table>"
        )
    if c.new_errors:
        parts += ["<h3>New errors by cause</h3>", _triage_html("new-errors", c.new_errors, local)]
    repo_rows = "".join(
        f"<tr><td>{_e(r.repo)}</td><td class=num>{r.instances}</td>"
        f"<td class=num>{r.resolved_before}</td><td class=num>{r.resolved_after}</td>"
        f'<td class="num {"better" if r.delta > 0 else "worse" if r.delta < 0 else ""}">'
        f"{_e(_signed(r.delta, pct=False))}</td>"
        f"<td class=num>{r.errors_before} → {r.errors_after}</td></tr>"
        for r in c.repos
    )
    parts.append(
        '<h3>Repositories</h3><table id="repo-delta"><thead><tr><th>repository</th>'
        f"<th class=num>instances</th><th class=num>resolved {_e(c.baseline)}</th>"
        f"<th class=num>resolved {_e(c.run)}</th><th class=num>delta</th>"
        f"<th class=num>errors</th></tr></thead><tbody>{repo_rows}</tbody></table>"
    )
    return "\n".join(parts)


_INSTANCE_COLUMNS = (
    ("instance", "instance", "text"),
    ("repo", "repository", "text"),
    ("status", "status", "num"),
    ("reason", "reason", "text"),
    ("f2p", "fail→pass", "num"),
    ("p2p", "pass→pass", "num"),
    ("duration", "duration", "num"),
    ("tool_calls", "tool calls", "num"),
    ("apply", "apply", "text"),
    ("message", "message", "text"),
    ("files", "files", "text"),
)


def render_html(
    run_dir: RunDir | str | os.PathLike[str], comparison: Comparison | None = None
) -> str:
    """The run's report as one self-contained HTML page (inline CSS, SVG and JS).

    Its links to instance files are relative to the run directory, where
    :func:`write_html` puts it. The instance table sorts by a click on a column header,
    and on load by a ``#sort=<column>`` or ``#sort=-<column>`` fragment. With a
    ``comparison`` (:func:`compare_runs`) it starts with what changed against the baseline.
    """
    run, results = _load(run_dir)
    row = aggregate(results)
    config = _public_config(run.read_config())
    local = {result.instance_id for result in results}
    causes = triage(results)

    leaderboard = "".join(
        [
            '<table id="leaderboard"><thead><tr>',
            "<th class=num>instances</th>",
            *(f"<th class=num>{_e(status.value)}</th>" for status in STATUS_ORDER),
            "<th class=num>fail→pass</th><th class=num>pass→pass</th></tr></thead><tbody><tr>",
            f"<td class=num>{row.total_instances}</td>",
            *(
                f"<td class=num>{_pct(getattr(row, f'{status.value}_pct'))}</td>"
                for status in STATUS_ORDER
            ),
            f"<td class=num>{_pct(row.fail_to_pass_passed_pct)}</td>",
            f"<td class=num>{_pct(row.pass_to_pass_passed_pct)}</td>",
            "</tr></tbody></table>",
        ]
    )
    repos = "".join(
        [
            '<table id="repositories"><thead><tr><th>repository</th><th class=num>instances'
            "</th><th class=num>resolved</th><th class=num>resolved %</th>"
            "<th class=num>fail→pass</th><th class=num>errors</th></tr></thead><tbody>",
            *(
                f"<tr><td>{_e(repo.repo)}</td><td class=num>{repo.instances}</td>"
                f"<td class=num>{repo.resolved}</td>"
                f"<td class=num>{_pct(repo.resolved_fraction)}</td>"
                f"<td class=num>{_pct(repo.fail_to_pass)}</td>"
                f"<td class=num>{repo.errors}</td></tr>"
                for repo in per_repository(results)
            ),
            "</tbody></table>",
        ]
    )
    header_cells = "".join(
        f'<th data-key="{key}" data-type="{kind}"'
        + (' class="num"' if kind == "num" and key != "status" else "")
        + f">{_e(label)}</th>"
        for key, label, kind in _INSTANCE_COLUMNS
    )
    instances = (
        f'<table id="instances" class="sortable"><thead><tr>{header_cells}</tr></thead><tbody>'
        + "".join(_instance_row(run, result) for result in results)
        + "</tbody></table>"
    )
    config_html = (
        '<dl class="config">'
        + "".join(f"<dt>{_e(key)}</dt><dd>{_e(value)}</dd>" for key, value in config)
        + "</dl>"
        if config
        else ""
    )
    title = f"swe-green run {run.path.name}"
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
            f"<h1>{_e(title)}</h1>",
            f'<p class="muted">{row.total_instances} instances</p>',
            config_html,
            _comparison_html(comparison, local) if comparison else "",
            "<h2>Leaderboard row</h2>",
            leaderboard,
            "<h2>Statuses</h2>",
            _status_chart(row),
            *(
                ["<h2>Errors by cause</h2>", _triage_html("triage", causes, local)]
                if causes
                else []
            ),
            *(
                [
                    "<h2>Caveats</h2><ul id=caveats>",
                    *(
                        f'<li><a href="#{_e(_anchor(iid))}">{_e(iid)}</a>: {_e(why)}</li>'
                        for iid, why in caveats(results)
                    ),
                    "</ul>",
                ]
                if caveats(results)
                else []
            ),
            "<h2>Repositories</h2>",
            repos,
            "<h2>Instances</h2>",
            '<p class="muted">Click a column header to sort.</p>',
            instances,
            f"<script>{_JS}</script>",
            "</body></html>",
        ]
    )


def write_html(
    run_dir: RunDir | str | os.PathLike[str], comparison: Comparison | None = None
) -> Path:
    """Write :func:`render_html` to ``report.html`` in the run directory."""
    run = run_dir if isinstance(run_dir, RunDir) else RunDir(run_dir)
    path = run.path / REPORT_FILE
    atomic_write_text(path, render_html(run, comparison))
    return path
