"""A run's leaderboard row and status chart as HTML that fits any window, ``report.html``'s
and the run viewer's alike: the row as tiles that wrap onto more lines (a label never breaks
inside a word), the chart as bars whose labels and counts keep their width."""

from __future__ import annotations

from html import escape

from orchestrator.frontends.report.data import STATUS_COLOURS, STATUS_ORDER, pct
from orchestrator.grading.classify import LeaderboardRow

SUMMARY_CSS = """
.tiles { display: grid; grid-template-columns: repeat(auto-fill, minmax(9.5rem, 1fr));
  gap: .5rem; margin: .5rem 0; }
.tile { border: 1px solid #e3e5ea; border-radius: .4rem; padding: .4rem .6rem; }
.tile .label { font-size: .8rem; color: #5f6670; overflow-wrap: normal; }
.tile .value { font-size: 1.15rem; font-variant-numeric: tabular-nums; }
.bars { display: grid; grid-template-columns: max-content 1fr max-content;
  gap: .25rem .5rem; align-items: center; font-size: .9rem; }
.bars > span { white-space: nowrap; overflow-wrap: normal; }
.bar { background: #f0f1f4; height: 1rem; border-radius: .2rem; overflow: hidden;
  min-width: 3rem; }
.bar span { display: block; height: 100%; }
@media (max-width: 26rem) { .bars { font-size: .8rem; gap: .2rem .35rem; } }
"""


def tiles_html(row: LeaderboardRow, element_id: str) -> str:
    """The leaderboard row: the instances, each status's share (and count), the test
    fractions, a tile each."""
    tiles = [("instances", str(row.total_instances))]
    tiles += [
        (s.value, f"{pct(getattr(row, f'{s.value}_pct'))} ({getattr(row, f'{s.value}_count')})")
        for s in STATUS_ORDER
    ]
    tiles += [
        ("fail→pass", pct(row.fail_to_pass_passed_pct)),
        ("pass→pass", pct(row.pass_to_pass_passed_pct)),
    ]
    return (
        f'<div class="tiles" id="{element_id}">'
        + "".join(
            f'<div class="tile" data-field="{escape(label)}"><div class="label">'
            f'{escape(label)}</div><div class="value">{escape(value)}</div></div>'
            for label, value in tiles
        )
        + "</div>"
    )


def bars_html(row: LeaderboardRow, element_id: str) -> str:
    """A bar per status: its name, its share as a bar, its count and share."""
    cells = []
    for status in STATUS_ORDER:
        share = getattr(row, f"{status.value}_pct")
        count = getattr(row, f"{status.value}_count")
        cells.append(
            f'<span data-status="{escape(status.value)}">{escape(status.value)}</span>'
            f'<div class="bar"><span style="width:{share * 100:.1f}%;'
            f'background:{STATUS_COLOURS[status]}"></span></div>'
            f'<span class="num">{count} ({pct(share)})</span>'
        )
    return (
        f'<div class="bars" id="{element_id}" role="img" aria-label="instances per status">'
        + "".join(cells)
        + "</div>"
    )
