"""The report as one self-contained HTML file (``swe-green report --html``), with its
comparison with a baseline run (``--compare``)."""

from __future__ import annotations

import html
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from orchestrator.context.run_dir import INSTANCES_DIR, RunDir, atomic_write_text
from orchestrator.frontends.report.assets import CSS, JS
from orchestrator.frontends.report.data import (
    INSTANCE_FILES,
    REPORT_FILE,
    STATUS_COLOURS,
    STATUS_ORDER,
    Comparison,
    StatusChange,
    TriageRow,
    duration,
    format_seconds,
    label_counts,
    load_run,
    pct,
    per_repository,
    public_config,
    reason_text,
    repo_of,
    triage,
)
from orchestrator.frontends.report.explain import run_header, tests_cell, tests_measured, why
from orchestrator.frontends.report.summary_html import bars_html, tiles_html
from orchestrator.frontends.report.text import (
    caveats,
    delta_style,
    gaming_line,
    signed,
    tamper_rows,
    twin_line,
    twin_rows,
)
from orchestrator.frontends.report.wider import wider_line, wider_rows
from orchestrator.grading.classify import LeaderboardRow, aggregate
from orchestrator.models import InstanceResult, Reason, Status

# --------------------------------------------------------------------------- fragments


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def status_badge(status: Status) -> str:
    return (
        f'<span class="status" style="background:{STATUS_COLOURS[status]}">'
        f"{esc(status.value)}</span>"
    )


def anchor(instance_id: str) -> str:
    return f"i-{instance_id}"


def instance_links(instance_ids: tuple[str, ...], local: set[str]) -> str:
    """Links to the instances' rows of this report (plain ids for those not in it)."""
    return ", ".join(
        f'<a href="#{esc(quote(anchor(i)))}">{esc(i)}</a>' if i in local else esc(i)
        for i in instance_ids
    )


def triage_html(
    table_id: str, rows: tuple[TriageRow, ...] | list[TriageRow], local: set[str]
) -> str:
    return "".join(
        [
            f'<table id="{table_id}" class="narrow-cards"><thead><tr><th class=num>n</th>'
            "<th>reason</th><th>first line of the message (normalised)</th><th>instances</th>"
            "</tr></thead><tbody>",
            *(
                f'<tr data-reason="{esc(row.reason)}"><td class=num data-label="n">{row.count}'
                f'</td><td data-label="reason">{esc(row.reason)}</td>'
                f'<td class=message data-label="message">{esc(row.message)}</td>'
                f'<td data-label="instances">{instance_links(row.instance_ids, local)}</td></tr>'
                for row in rows
            ),
            "</tbody></table>",
        ]
    )


# --------------------------------------------------------------------------- HTML


def _links(run: RunDir, result: InstanceResult) -> str:
    instance_dir = run.path / INSTANCES_DIR / result.instance_id
    links = []
    for name in INSTANCE_FILES:
        if (instance_dir / name).is_file():
            href = f"{INSTANCES_DIR}/{quote(result.instance_id)}/{quote(name)}"
            links.append(f'<a href="{esc(href)}">{esc(name)}</a>')
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
            links.append(f'<a href="{esc(href)}">{esc(label)}</a>')
    return " ".join(links)


def _marks(result: InstanceResult) -> str:
    """The verdict's marks after its badge: ``*`` reduced tests, ``~`` a flaky deciding test."""
    marks = result.verdict.removeprefix(result.status.value)
    if not marks:
        return ""
    flaky = ", ".join(sorted(result.flaky_tests))
    title = "; ".join(
        part
        for part in (
            "graded on a reduced test set" if "*" in marks else "",
            f"flaky deciding test(s): {flaky}" if flaky else "",
            "the repository's wider tests that pass with gold fail with this patch"
            if "!" in marks
            else "",
        )
        if part
    )
    return f' <span class="marks" title="{esc(title)}">{esc(marks)}</span>'


def _labels_html(results: list[InstanceResult], local: set[str]) -> list[str]:
    """The not-resolved instances by SWE-bench 5.0 failure label; nothing when none."""
    rows = label_counts(results)
    if not rows:
        return []
    return [
        "<h2>Not resolved by SWE-bench 5.0 failure label</h2>",
        '<table id="labels"><thead><tr><th class=num>n</th><th>label</th><th>tier</th>'
        "<th>instances</th></tr></thead><tbody>",
        *(
            f'<tr data-label="{esc(row.label)}"><td class=num>{row.count}</td>'
            f"<td>{esc(row.label)}</td><td>{esc(row.tier)}</td>"
            f"<td>{instance_links(row.instance_ids, local)}</td></tr>"
            for row in rows
        ),
        "</tbody></table>",
    ]


def _instance_row(run: RunDir, result: InstanceResult) -> str:
    tests = result.tests
    f_passed, f_failed = len(tests.fail_to_pass_passed), len(tests.fail_to_pass_failed)
    p_passed, p_failed = len(tests.pass_to_pass_passed), len(tests.pass_to_pass_failed)
    seconds = duration(result)
    timings = ", ".join(f"{k} {format_seconds(v)}" for k, v in result.timings.items())
    measured = tests_measured(result)
    # an error's own message; otherwise why it is not resolved (its first failing tests)
    said = result.status == Status.ERROR or result.reason == Reason.TAMPER_DETECTED
    text = result.message if said else why(result) or result.message
    message = text if len(text) <= 300 else text[:297] + "..."
    cells = [
        f'<td class="id">{esc(result.instance_id)}</td>',
        f"<td>{esc(repo_of(result))}</td>",
        f'<td data-sort="{STATUS_ORDER.index(result.status)}">{status_badge(result.status)}'
        + _marks(result)
        + (
            f' <span class="suspicious" title="{esc("; ".join(result.suspicious))}">'
            "suspicious</span>"
            if result.suspicious
            else ""
        )
        + "</td>",
        f"<td>{esc(reason_text(result))}</td>",
        f'<td class="num" data-sort="{result.fail_to_pass_fraction if measured else -1:.6f}">'
        f"{tests_cell(f_passed, f_failed, measured)}</td>",
        f'<td class="num" data-sort="{result.pass_to_pass_fraction if measured else -1:.6f}">'
        f"{tests_cell(p_passed, p_failed, measured)}"
        + (
            f" (+{len(tests.pass_to_pass_excluded)} excl.)"
            if tests.pass_to_pass_excluded and measured
            else ""
        )
        + "</td>",
        f'<td class="num" data-sort="{seconds:.3f}" title="{esc(timings)}">'
        f"{esc(format_seconds(seconds))}</td>",
        f'<td class="num">{result.tool_calls}</td>',
        f"<td>{esc(result.apply_strategy or '')}</td>",
        f'<td class="message">{esc(message)}</td>',
        f'<td class="links">{_links(run, result)}</td>',
    ]
    labelled = [
        cell.replace("<td", f'<td data-label="{esc(label)}"', 1)
        for cell, (_key, label, _kind) in zip(cells, _INSTANCE_COLUMNS, strict=True)
    ]
    return (
        f'<tr id="{esc(anchor(result.instance_id))}" data-instance="{esc(result.instance_id)}">'
        + "".join(labelled)
        + "</tr>"
    )


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
    """The run's report as one self-contained HTML page (inline CSS and JS).

    Its links to instance files are relative to the run directory, where
    :func:`write_html` puts it. The instance table sorts by a click on a column header,
    and on load by a ``#sort=<column>`` or ``#sort=-<column>`` fragment. With a
    ``comparison`` (:func:`compare_runs`) it starts with what changed against the baseline.
    """
    run, results = load_run(run_dir)
    row = aggregate(results)
    config = public_config(run.read_config())
    local = {result.instance_id for result in results}
    causes = triage(results)

    title = f"swe-green run {run.path.name}"
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body>",
            f"<h1>{esc(title)}</h1>",
            _gaming_note(row),
            f'<p class="muted" id="run-header">{row.total_instances} instances · '
            f"{esc(run_header(run, results).line())}</p>",
            (
                f'<p class="muted" id=reduced>* {row.reduced_tests_count} instance(s) graded on '
                "a reduced test set (tests this host cannot grade left out; see Caveats)</p>"
                if row.reduced_tests_count
                else ""
            ),
            (
                f'<p class="muted" id=flaky>~ {row.flaky_count} instance(s) rest on a test that '
                "changed its outcome when re-run alone (the verdict is the first outcome's, as "
                "officially; see Caveats)</p>"
                if row.flaky_count
                else ""
            ),
            _twin_note(row, results),
            _wider_note(row, results),
            comparison_html(comparison, local) if comparison else "",
            _config_html(config),
            "<h2>Leaderboard row</h2>",
            tiles_html(row, "leaderboard"),
            "<h2>Statuses</h2>",
            bars_html(row, "status-chart"),
            *(["<h2>Errors by cause</h2>", triage_html("triage", causes, local)] if causes else []),
            *_labels_html(results, local),
            *_caveats_html(results),
            *_tamper_html(results),
            *_linked_list(
                "Twin passed (a FAIL_TO_PASS test's impossible twin passed: the test counted "
                "as failing)",
                "twin-passed",
                twin_rows(results),
            ),  # fmt: skip
            *_linked_list(
                "Regressions beyond the task's tests (resolved!: the verdict stands)",
                "wider-regressions",
                wider_rows(results),
            ),
            "<h2>Repositories</h2>",
            _repositories_html(results),
            "<h2>Instances</h2>",
            '<p class="muted sort-hint">Click a column header to sort.</p>',
            _instances_html(run, results),
            f"<script>{JS}</script>",
            "</body></html>",
        ]
    )


def _repositories_html(results: list[InstanceResult]) -> str:
    return "".join(
        [
            '<table id="repositories" class="narrow-cards"><thead><tr><th>repository</th>'
            "<th class=num>instances</th><th class=num>resolved</th><th class=num>resolved %"
            "</th><th class=num>fail→pass</th><th class=num>errors</th></tr></thead><tbody>",
            *(
                f'<tr><td data-label="repository">{esc(repo.repo)}</td>'
                f'<td class=num data-label="instances">{repo.instances}</td>'
                f'<td class=num data-label="resolved">{repo.resolved}</td>'
                f'<td class=num data-label="resolved %">{pct(repo.resolved_fraction)}</td>'
                f'<td class=num data-label="fail→pass">{pct(repo.fail_to_pass)}</td>'
                f'<td class=num data-label="errors">{repo.errors}</td></tr>'
                for repo in per_repository(results)
            ),
            "</tbody></table>",
        ]
    )


def _instances_html(run: RunDir, results: list[InstanceResult]) -> str:
    """The instance table, sortable by a click on a column header."""
    header_cells = "".join(
        f'<th data-key="{key}" data-type="{kind}"'
        + (' class="num"' if kind == "num" and key != "status" else "")
        + f">{esc(label)}</th>"
        for key, label, kind in _INSTANCE_COLUMNS
    )
    return (
        f'<table id="instances" class="sortable cards auto"><thead><tr>{header_cells}</tr>'
        "</thead><tbody>"
        + "".join(_instance_row(run, result) for result in results)
        + "</tbody></table>"
    )


def _config_html(config: list[tuple[str, str]]) -> str:
    return (
        '<dl class="config">'
        + "".join(f"<dt>{esc(key)}</dt><dd>{esc(value)}</dd>" for key, value in config)
        + "</dl>"
        if config
        else ""
    )


def _gaming_note(row: LeaderboardRow) -> str:
    """The run's first word when a twin passed anywhere in it (nothing otherwise)."""
    line = gaming_line(row)
    return f'<p class="gaming" id=gaming><strong>{esc(line.plain)}</strong></p>' if line else ""


def _twin_note(row: LeaderboardRow, results: list[InstanceResult]) -> str:
    """The footnote on the verdicts checked with impossible twins (nothing if none needed)."""
    line = twin_line(row, results)
    return f'<p class="muted" id=twins>{esc(line.plain)}</p>' if line is not None else ""


def _wider_note(row: LeaderboardRow, results: list[InstanceResult]) -> str:
    """The footnote on the wider runs (nothing if none was asked for)."""
    line = wider_line(row, results)
    return f'<p class="muted" id=wider>{esc(line)}</p>' if line else ""


def _caveats_html(results: list[InstanceResult]) -> list[str]:
    return _linked_list("Caveats", "caveats", caveats(results))


def _tamper_html(results: list[InstanceResult]) -> list[str]:
    title = "Tamper detected (every test counted as failing)"
    return _linked_list(title, "tampered", tamper_rows(results))


def _linked_list(title: str, list_id: str, rows: list[tuple[str, str]]) -> list[str]:
    """A heading and a list of (instance, text), each linked to its row; nothing when empty."""
    if not rows:
        return []
    return [
        f"<h2>{esc(title)}</h2><ul id={list_id}>",
        *(
            f'<li><a href="#{esc(anchor(iid))}">{esc(iid)}</a>: {esc(text)}</li>'
            for iid, text in rows
        ),
        "</ul>",
    ]


def write_html(
    run_dir: RunDir | str | os.PathLike[str], comparison: Comparison | None = None
) -> Path:
    """Write :func:`render_html` to ``report.html`` in the run directory."""
    run = run_dir if isinstance(run_dir, RunDir) else RunDir(run_dir)
    path = run.path / REPORT_FILE
    atomic_write_text(path, render_html(run, comparison))
    return path


# --------------------------------------------------------------------------- the comparison


def comparison_head(c: Comparison) -> tuple[str, str]:
    """What a comparison covers (its instances, whether the selections differ) and its
    verdict paragraph, as the report and the run viewer show them."""
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
    return scope, verdict


@dataclass(frozen=True)
class ShareDelta:
    """One share of the leaderboard row in a comparison, as the report and the run viewer
    show it: texts, not yet escaped."""

    share: str  # the row's field, without its ``_pct``
    before: str  # the baseline's share, a percentage
    after: str  # the run's
    delta: str  # run − baseline, signed, in percentage points
    style: str  # the delta's class: better, worse, or empty when it depends


@dataclass(frozen=True)
class ChangeGroup:
    """The instances whose status changed one way between the baseline and the run."""

    table_id: str  # lost, gained, changed: the HTML id of its table
    title: str
    changes: tuple[StatusChange, ...]


def comparison_deltas(c: Comparison) -> tuple[list[ShareDelta], list[ChangeGroup]]:
    """What a comparison shows changed, for the report and the run viewer alike: each share
    of the leaderboard row, and the instances whose status changed, in three groups (lost,
    gained, other; empty ones too)."""
    shares = [
        ShareDelta(name.removesuffix("_pct"), pct(before), pct(after), signed(change),
                   delta_style(name, change))
        for name, before, after, change in c.row_delta()
    ]  # fmt: skip
    groups = [
        ChangeGroup("lost", "Resolved → not resolved", c.lost),
        ChangeGroup("gained", "Not resolved → resolved", c.gained),
        ChangeGroup("changed", "Other status changes", c.changed),
    ]
    return shares, groups


def comparison_html(c: Comparison, local: set[str]) -> str:
    scope, verdict = comparison_head(c)
    shares, groups = comparison_deltas(c)
    delta_rows = "".join(
        f"<tr><td>{esc(d.share)}</td><td class=num>{esc(d.before)}</td>"
        f"<td class=num>{esc(d.after)}</td>"
        f'<td class="num {d.style}">{esc(d.delta)}</td></tr>'
        for d in shares
    )
    parts = [
        f"<h2>Compared with {esc(c.baseline)}</h2>",
        f'<p class="muted">{esc(scope)}</p>',
        verdict,
        f'<table id="row-delta"><thead><tr><th>share</th><th class=num>{esc(c.baseline)}</th>'
        f"<th class=num>{esc(c.run)}</th><th class=num>delta</th></tr></thead>"
        f"<tbody>{delta_rows}</tbody></table>",
    ]
    parts += _changes_html(c, groups, local)
    if c.new_errors:
        parts += ["<h3>New errors by cause</h3>", triage_html("new-errors", c.new_errors, local)]
    parts.append(_repo_delta_html(c))
    return "\n".join(parts)


def _changes_html(c: Comparison, groups: list[ChangeGroup], local: set[str]) -> list[str]:
    """One table per kind of status change (lost, gained, other), those with any rows."""
    parts = []
    for g in groups:
        if not g.changes:
            continue
        rows = "".join(
            f"<tr><td>{instance_links((ch.instance_id,), local)}</td><td>{esc(ch.repo)}</td>"
            f"<td>{status_badge(ch.before)}</td><td>{status_badge(ch.after)}</td>"
            f"<td>{esc(ch.reason)}</td></tr>"
            for ch in g.changes
        )
        parts.append(
            f'<h3>{esc(g.title)}</h3><table id="{g.table_id}"><thead><tr><th>instance</th>'
            f"<th>repository</th><th>{esc(c.baseline)}</th><th>{esc(c.run)}</th><th>reason</th>"
            f"</tr></thead><tbody>{rows}</tbody></table>"
        )
    return parts


def _repo_delta_html(c: Comparison) -> str:
    repo_rows = "".join(
        f"<tr><td>{esc(r.repo)}</td><td class=num>{r.instances}</td>"
        f"<td class=num>{r.resolved_before}</td><td class=num>{r.resolved_after}</td>"
        f'<td class="num {"better" if r.delta > 0 else "worse" if r.delta < 0 else ""}">'
        f"{esc(signed(r.delta, pct=False))}</td>"
        f"<td class=num>{r.errors_before} → {r.errors_after}</td></tr>"
        for r in c.repos
    )
    return (
        '<h3>Repositories</h3><table id="repo-delta"><thead><tr><th>repository</th>'
        f"<th class=num>instances</th><th class=num>resolved {esc(c.baseline)}</th>"
        f"<th class=num>resolved {esc(c.run)}</th><th class=num>delta</th>"
        f"<th class=num>errors</th></tr></thead><tbody>{repo_rows}</tbody></table>"
    )
