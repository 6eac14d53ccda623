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

from orchestrator.grading import LeaderboardRow, aggregate
from orchestrator.models import InstanceResult, Status
from orchestrator.results import INSTANCES_DIR, RESULT_FILE, RunDir, atomic_write_text

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

    parts: list[RenderableType] = [headline, statuses, repos, slow]
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
    return f'<tr data-instance="{_e(result.instance_id)}">' + "".join(cells) + "</tr>"


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


def render_html(run_dir: RunDir | str | os.PathLike[str]) -> str:
    """The run's report as one self-contained HTML page (inline CSS, SVG and JS).

    Its links to instance files are relative to the run directory, where
    :func:`write_html` puts it. The instance table sorts by a click on a column header,
    and on load by a ``#sort=<column>`` or ``#sort=-<column>`` fragment.
    """
    run, results = _load(run_dir)
    row = aggregate(results)
    config = _public_config(run.read_config())

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
            "<h2>Leaderboard row</h2>",
            leaderboard,
            "<h2>Statuses</h2>",
            _status_chart(row),
            "<h2>Repositories</h2>",
            repos,
            "<h2>Instances</h2>",
            '<p class="muted">Click a column header to sort.</p>',
            instances,
            f"<script>{_JS}</script>",
            "</body></html>",
        ]
    )


def write_html(run_dir: RunDir | str | os.PathLike[str]) -> Path:
    """Write :func:`render_html` to ``report.html`` in the run directory."""
    run = run_dir if isinstance(run_dir, RunDir) else RunDir(run_dir)
    path = run.path / REPORT_FILE
    atomic_write_text(path, render_html(run))
    return path
