"""The HTML report's style sheet and script (inline: the report is one file). Its tables are
the run viewer's (:mod:`orchestrator.frontends.report.table_style`): the page's width, cells that
wrap, and the instance table as cards on a window narrower than it needs (``CARDS_BELOW``),
its "why" column (``message``) always in view; the leaderboard row and the status chart are
:mod:`orchestrator.frontends.report.summary_html`'s."""

from orchestrator.frontends.report.summary_html import SUMMARY_CSS
from orchestrator.frontends.report.table_style import TABLE_CSS, cards_css

CARDS_BELOW = "60rem"  # eleven columns need about this much
NARROW_CARDS_BELOW = "40rem"  # the small tables (errors by cause, repositories): a phone

CSS = (
    """
:root { font-family: system-ui, sans-serif; color: #1d2330; background: #fff; }
* { box-sizing: border-box; }
body { margin: 1.5rem auto; max-width: 1400px; padding: 0 1rem; }
h1 { font-size: 1.4rem; margin-bottom: .25rem; }
h2 { font-size: 1.1rem; margin-top: 2rem; }
.muted { color: #666; }
.gaming { color: #b00020; border: 2px solid #b00020; padding: .5em; }
"""
    + TABLE_CSS
    + """
.suspicious { color: #b45309; font-weight: 600; cursor: help; }
.status { display: inline-block; padding: 0 .45rem; border-radius: .6rem; color: #fff;
  font-size: .8rem; white-space: nowrap; }
table.auto { table-layout: auto; }
table.auto th, table.auto td { overflow-wrap: break-word; }
table.auto td.message { min-width: 12rem; }
#run-header { overflow-wrap: anywhere; }
@media (max-width: 900px) { body { margin: .5rem auto; padding: 0 .5rem; } }
.links a { display: inline-block; margin-right: .4rem; }
dl.config { display: grid; grid-template-columns: max-content 1fr; gap: .1rem 1rem;
  font-size: .85rem; }
dl.config dt { color: #666; }
dl.config dd { margin: 0; overflow-wrap: anywhere; }
.green, .better { color: #2e9d4f; } .red, .worse { color: #c8412f; }
#verdict { font-weight: bold; } #verdict.regressed { color: #c8412f; }
#verdict.ok { color: #2e9d4f; }
"""
    + SUMMARY_CSS
    + cards_css(CARDS_BELOW)
    + cards_css(NARROW_CARDS_BELOW, "narrow-cards")
)

JS = """
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
