"""The HTML report's comparison with a baseline run (``swe-green report --html --compare``)."""

from __future__ import annotations

from orchestrator.frontends.report.data import Comparison, pct
from orchestrator.frontends.report.html_parts import (
    esc,
    instance_links,
    status_badge,
    triage_html,
)
from orchestrator.frontends.report.text import delta_style, signed


def comparison_html(c: Comparison, local: set[str]) -> str:
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
        f"<tr><td>{esc(name.removesuffix('_pct'))}</td><td class=num>{pct(before)}</td>"
        f"<td class=num>{pct(after)}</td>"
        f'<td class="num {delta_style(name, change)}">{esc(signed(change))}</td></tr>'
        for name, before, after, change in c.row_delta()
    )
    parts = [
        f"<h2>Compared with {esc(c.baseline)}</h2>",
        f'<p class="muted">{esc(scope)}</p>',
        verdict,
        f'<table id="row-delta"><thead><tr><th>share</th><th class=num>{esc(c.baseline)}</th>'
        f"<th class=num>{esc(c.run)}</th><th class=num>delta</th></tr></thead>"
        f"<tbody>{delta_rows}</tbody></table>",
    ]
    parts += _changes_html(c, local)
    if c.new_errors:
        parts += ["<h3>New errors by cause</h3>", triage_html("new-errors", c.new_errors, local)]
    parts.append(_repo_delta_html(c))
    return "\n".join(parts)


def _changes_html(c: Comparison, local: set[str]) -> list[str]:
    """One table per kind of status change (lost, gained, other), those with any rows."""
    parts = []
    for table_id, title, changes in (
        ("lost", "Resolved → not resolved", c.lost),
        ("gained", "Not resolved → resolved", c.gained),
        ("changed", "Other status changes", c.changed),
    ):
        if not changes:
            continue
        rows = "".join(
            f"<tr><td>{instance_links((ch.instance_id,), local)}</td><td>{esc(ch.repo)}</td>"
            f"<td>{status_badge(ch.before)}</td><td>{status_badge(ch.after)}</td>"
            f"<td>{esc(ch.reason)}</td></tr>"
            for ch in changes
        )
        parts.append(
            f'<h3>{esc(title)}</h3><table id="{table_id}"><thead><tr><th>instance</th>'
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
