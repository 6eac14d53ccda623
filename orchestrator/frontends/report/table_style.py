"""The tables of the HTML pages, the run viewer's and ``report.html`` alike: they take the
page's width and wrap their cells (no sideways scroll), and below a width a table of class
``cards`` shows each row as a card, each cell headed by its column (``data-label``), an
empty cell left out; a table's "click a header to sort" hint (``sort-hint``) goes with the
headers."""

from __future__ import annotations

TABLE_CSS = """
table { border-collapse: collapse; width: 100%; table-layout: fixed; font-size: .9rem; }
th, td { padding: .3rem .5rem; border-bottom: 1px solid #e3e5ea; text-align: left;
  vertical-align: top; overflow-wrap: anywhere; }
th { font-weight: 600; background: #f6f7f9; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
td.time { white-space: nowrap; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th[aria-sort="ascending"]::after { content: " \\25B2"; }
table.sortable th[aria-sort="descending"]::after { content: " \\25BC"; }
"""


def cards_css(below: str, table_class: str = "cards") -> str:
    """The rules that turn each row of a ``table_class`` table into a card below ``below``."""
    t = f"table.{table_class}"
    # the sort hint speaks of the sortable (cards) table's headers, hidden with them
    hint = "  .sort-hint { display: none; }\n" if table_class == "cards" else ""
    return f"""
@media (max-width: {below}) {{
  {t} thead {{ display: none; }}
  {t}, {t} tbody, {t} tr, {t} td {{ display: block; width: 100%; }}
  {t} tr {{ border: 1px solid #e3e5ea; border-radius: .4rem; margin: .5rem 0;
    padding: .25rem; }}
  {t} td {{ border: 0; text-align: left; padding: .1rem .4rem; }}
  {t} td[data-label]::before {{ content: attr(data-label) ": "; color: #5f6670; }}
  {t} td:empty {{ display: none; }}
{hint}}}
"""
