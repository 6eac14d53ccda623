"""The run viewer's overview: the leaderboard row, statuses, errors by cause with the fix,
caveats, reduced test sets, tamper flags, and every instance linked to its page."""

from __future__ import annotations

from orchestrator.context.run_dir import RunDir
from orchestrator.frontends.report.assets import JS as SORT_JS
from orchestrator.frontends.report.data import (
    STATUS_ORDER,
    TriageRow,
    duration,
    format_seconds,
    pct,
    per_repository,
    triage,
)
from orchestrator.frontends.report.explain import run_header, tests_cell, tests_measured, why
from orchestrator.frontends.report.summary_html import bars_html, tiles_html
from orchestrator.frontends.report.text import (
    caveats,
    reduced_note,
    tamper_rows,
    twin_line,
    twin_rows,
)
from orchestrator.frontends.viewer.fixes import fix_for
from orchestrator.frontends.viewer.parts import esc, instance_link, page, status_badge
from orchestrator.grading.classify import LeaderboardRow, aggregate
from orchestrator.models import InstanceResult, Status

DEPTH = 0


def render_overview(
    run: RunDir, results: list[InstanceResult], comparisons: list[tuple[str, str]]
) -> str:
    """The overview page; ``comparisons`` are (page file, baseline name) to link to."""
    row = aggregate(results)
    local = {r.instance_id for r in results}
    causes = triage(results)
    reduced = _reduced(results)
    body = [
        f"<h1>Run {esc(run.path.name)}</h1>",
        f'<p class="muted" id="run-header">{row.total_instances} instance(s) · '
        f"{esc(run_header(run, results).line())}</p>",
        *(
            [
                '<p id="comparisons">Compared with: '
                + ", ".join(f'<a href="{esc(href)}">{esc(name)}</a>' for href, name in comparisons)
                + "</p>"
            ]
            if comparisons
            else []
        ),
        '<h2 id="leaderboard">Leaderboard row</h2>',
        tiles_html(row, "leaderboard-row"),
        '<h2 id="statuses">Statuses</h2>',
        bars_html(row, "status-bars"),
        *_causes(causes, local),
        *_notes("Caveats", "caveats", [c for c in caveats(results) if c not in reduced], local),
        *_notes("Reduced test sets", "reduced", reduced, local),
        *_notes(
            "Tamper detected (every test counted as failing)",
            "tampered",
            tamper_rows(results),
            local,
        ),  # fmt: skip
        *_notes(
            "Twin passed (a FAIL_TO_PASS test's impossible twin passed: the test counted as "
            "failing)",
            "twin-passed",
            twin_rows(results),
            local,
        ),  # fmt: skip
        *_twin_line(row, results),
        '<h2 id="repositories">Repositories</h2>',
        _repositories(results),
        '<h2 id="all-instances">Instances</h2>',
        '<p class="muted"><span class="sort-hint">Click a column header to sort. </span>'
        "An instance opens its page.</p>",
        _instances(results),
    ]
    return page(f"swe-green run {run.path.name}", body, DEPTH, script=SORT_JS)


def _twin_line(row: LeaderboardRow, results: list[InstanceResult]) -> list[str]:
    """The verdicts checked with impossible twins, and why the others were not."""
    line = twin_line(row, results)
    return [f'<p class="muted" id="twins">{esc(line.plain)}</p>'] if line is not None else []


def _causes(causes: list[TriageRow], local: set[str]) -> list[str]:
    if not causes:
        return []
    parts = ['<h2 id="errors">Errors by cause</h2>']
    for cause in causes:
        fix = fix_for(cause.reason)
        parts.append(
            f'<div class="card cause" data-reason="{esc(cause.reason)}">'
            f"<strong>{cause.count} × {esc(cause.reason)}</strong>"
            f"<pre>{esc(cause.message)}</pre>"
            + (f'<div class="fix">Fix: {esc(fix)}</div>' if fix else "")
            + "<p>"
            + ", ".join(instance_link(i, DEPTH, local) for i in cause.instance_ids)
            + "</p></div>"
        )
    return parts


def _reduced(results: list[InstanceResult]) -> list[tuple[str, str]]:
    return [
        (r.instance_id, reduced_note(r))
        for r in sorted(results, key=lambda r: r.instance_id)
        if r.reduced_tests and r.status != Status.ERROR
    ]


def _notes(title: str, list_id: str, rows: list[tuple[str, str]], local: set[str]) -> list[str]:
    if not rows:
        return []
    return [
        f'<h2 id="{list_id}-title">{esc(title)}</h2><ul id="{list_id}">',
        *(f"<li>{instance_link(iid, DEPTH, local)}: {esc(text)}</li>" for iid, text in rows),
        "</ul>",
    ]


def _repositories(results: list[InstanceResult]) -> str:
    rows = "".join(
        f'<tr><td data-label="repository">{esc(r.repo)}</td>'
        f'<td class=num data-label="instances">{r.instances}</td>'
        f'<td class=num data-label="resolved">{r.resolved} ({pct(r.resolved_fraction)})</td>'
        f'<td class=num data-label="fail→pass">{pct(r.fail_to_pass)}</td>'
        f'<td class=num data-label="errors">{r.errors}</td></tr>'
        for r in per_repository(results)
    )
    return (
        '<table id="repositories" class="cards"><colgroup><col style="width:36%"><col>'
        "<col style='width:22%'><col><col></colgroup><thead><tr><th>repository</th>"
        "<th class=num>instances</th><th class=num>resolved</th><th class=num>fail→pass</th>"
        f"<th class=num>errors</th></tr></thead><tbody>{rows}</tbody></table>"
    )


_COLUMNS = (
    ("instance", "instance", "text", "22%"),
    ("status", "status", "num", "20%"),
    ("f2p", "F→P", "num", "7%"),
    ("p2p", "P→P", "num", "8%"),
    ("duration", "time", "num", "10%"),
    ("message", "why", "text", ""),
)


def _instances(results: list[InstanceResult]) -> str:
    local = {r.instance_id for r in results}
    cols = "".join(f'<col style="width:{w}">' if w else "<col>" for *_, w in _COLUMNS)
    head = "".join(
        f'<th data-key="{key}" data-type="{kind}"'
        + (' class="num"' if kind == "num" and key != "status" else "")
        + f">{esc(label)}</th>"
        for key, label, kind, _ in _COLUMNS
    )
    rows = []
    for r in sorted(results, key=lambda r: r.instance_id):
        t = r.tests
        measured = tests_measured(r)
        seconds = duration(r)
        rows.append(
            f'<tr data-instance="{esc(r.instance_id)}">'
            f'<td data-label="instance">{instance_link(r.instance_id, DEPTH, local)}</td>'
            f'<td data-label="status" data-sort="{STATUS_ORDER.index(r.status)}">'
            f"{status_badge(r.status)}{'*' if r.reduced_tests else ''}</td>"
            f'<td class=num data-label="F→P" data-sort="'
            f'{r.fail_to_pass_fraction if measured else -1:.6f}">'
            f"{tests_cell(len(t.fail_to_pass_passed), len(t.fail_to_pass_failed), measured)}</td>"
            f'<td class=num data-label="P→P" data-sort="'
            f'{r.pass_to_pass_fraction if measured else -1:.6f}">'
            f"{tests_cell(len(t.pass_to_pass_passed), len(t.pass_to_pass_failed), measured)}</td>"
            f'<td class="num time" data-label="time" data-sort="{seconds:.3f}">'
            f"{esc(format_seconds(seconds))}</td>"
            f'<td data-label="why">{esc(_short(why(r)))}</td></tr>'
        )
    return (
        f'<table id="instances" class="sortable cards"><colgroup>{cols}</colgroup><thead><tr>'
        f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _short(text: str, limit: int = 220) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
