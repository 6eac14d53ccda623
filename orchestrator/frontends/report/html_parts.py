"""Fragments the HTML report's pages share: escaping, status badges, instance links, and a
table of errors by cause."""

from __future__ import annotations

import html
from urllib.parse import quote

from orchestrator.frontends.report.data import STATUS_COLOURS, TriageRow
from orchestrator.models import Status


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
            f'<table id="{table_id}"><thead><tr><th class=num>n</th><th>reason</th>'
            "<th>first line of the message (normalised)</th><th>instances</th></tr></thead><tbody>",
            *(
                f'<tr data-reason="{esc(row.reason)}"><td class=num>{row.count}</td>'
                f"<td>{esc(row.reason)}</td><td class=message>{esc(row.message)}</td>"
                f"<td>{instance_links(row.instance_ids, local)}</td></tr>"
                for row in rows
            ),
            "</tbody></table>",
        ]
    )
