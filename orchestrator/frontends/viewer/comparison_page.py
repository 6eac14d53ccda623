"""The run viewer's comparison of a run with a baseline run: the verdict, the leaderboard
row's shares side by side, and each instance whose status changed with the reason."""

from __future__ import annotations

from orchestrator.frontends.report.data import Comparison, StatusChange
from orchestrator.frontends.report.html import comparison_deltas, comparison_head
from orchestrator.frontends.viewer.parts import esc, instance_link, page, status_badge

DEPTH = 0


def comparison_file(baseline: str) -> str:
    """The comparison page's file name in ``viewer/``."""
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in baseline)
    return f"compare-{safe}.html"


def render_comparison_page(c: Comparison, local: set[str]) -> str:
    scope, verdict = comparison_head(c)
    shares, groups = comparison_deltas(c)
    delta_rows = "".join(
        f'<tr><td data-label="share">{esc(d.share)}</td>'
        f'<td class=num data-label="{esc(c.baseline)}">{esc(d.before)}</td>'
        f'<td class=num data-label="{esc(c.run)}">{esc(d.after)}</td>'
        f'<td class="num {d.style}" data-label="delta">{esc(d.delta)}</td></tr>'
        for d in shares
    )
    body = [
        '<nav class="crumbs"><a href="index.html">← run overview</a></nav>',
        f"<h1>{esc(c.run)} compared with {esc(c.baseline)}</h1>",
        f'<p class="muted">{esc(scope)}</p>',
        verdict,
        '<h2 id="shares">Leaderboard row</h2>',
        f'<table id="row-delta" class="cards"><thead><tr><th>share</th>'
        f"<th class=num>{esc(c.baseline)}</th><th class=num>{esc(c.run)}</th>"
        f"<th class=num>delta</th></tr></thead><tbody>{delta_rows}</tbody></table>",
    ]
    for g in groups:
        body.append(f'<h2 id="{g.table_id}-title">{esc(g.title)} ({len(g.changes)})</h2>')
        body.append(_changes(g.table_id, g.changes, c, local) if g.changes else "<p>None.</p>")
    if c.fixed_errors:
        body.append(
            '<h2 id="fixed">Errors no longer</h2><p>'
            + ", ".join(instance_link(i, DEPTH, local) for i in c.fixed_errors)
            + "</p>"
        )
    for title, ids in ((f"Only in {c.run}", c.only_in_run),
                       (f"Only in {c.baseline}", c.only_in_baseline)):  # fmt: skip
        if ids:
            body.append(f"<h2>{esc(title)} ({len(ids)})</h2><p>{esc(', '.join(ids))}</p>")
    return page(f"{c.run} vs {c.baseline}", body, DEPTH)


def _changes(
    table_id: str, changes: tuple[StatusChange, ...], c: Comparison, local: set[str]
) -> str:
    rows = "".join(
        f'<tr data-instance="{esc(ch.instance_id)}">'
        f'<td data-label="instance">{instance_link(ch.instance_id, DEPTH, local)}</td>'
        f'<td data-label="{esc(c.baseline)}">{status_badge(ch.before)}</td>'
        f'<td data-label="{esc(c.run)}">{status_badge(ch.after)}</td>'
        f'<td data-label="reason" class="reason">{esc(ch.reason)}</td></tr>'
        for ch in changes
    )
    return (
        f'<table id="{table_id}" class="cards"><colgroup><col style="width:32%">'
        '<col style="width:16%"><col style="width:16%"><col></colgroup><thead><tr>'
        f"<th>instance</th><th>{esc(c.baseline)}</th><th>{esc(c.run)}</th><th>reason</th>"
        f"</tr></thead><tbody>{rows}</tbody></table>"
    )
