"""The run viewer's style sheet, written once beside its pages (``viewer.css``).

Every page fits its window: tables take the page's width and wrap their cells, and below
40rem the instance tables turn each row into a card (:mod:`..table_style`, shared with
``report.html``); diffs and outputs wrap their long lines.
"""

from orchestrator.frontends.report.summary_html import SUMMARY_CSS
from orchestrator.frontends.report.table_style import TABLE_CSS, cards_css

CSS = (
    """
:root { font-family: system-ui, sans-serif; color: #1d2330; background: #fff;
  line-height: 1.4; }
* { box-sizing: border-box; }
body { margin: 1rem auto; max-width: 72rem; padding: 0 1rem; overflow-wrap: anywhere; }
h1 { font-size: 1.35rem; margin: .25rem 0; }
h2 { font-size: 1.1rem; margin-top: 1.8rem; border-bottom: 1px solid #e3e5ea; }
h3 { font-size: 1rem; margin-top: 1.2rem; }
a { color: #1f5fbf; }
nav.crumbs { font-size: .9rem; margin-bottom: .5rem; }
.muted { color: #5f6670; }
.sentence { font-size: 1.05rem; }
"""
    + TABLE_CSS
    + """
.status { display: inline-block; padding: 0 .45rem; border-radius: .6rem; color: #fff;
  font-size: .8rem; max-width: 100%; }
.outcome { display: inline-block; min-width: 4.2rem; padding: 0 .3rem; border-radius: .3rem;
  font-size: .75rem; text-align: center; color: #fff; margin-right: .4rem; }
.outcome.passed { background: #2e9d4f; } .outcome.failed { background: #c8412f; }
.outcome.excluded { background: #8a8f98; }
.card { border: 1px solid #e3e5ea; border-radius: .4rem; padding: .5rem .75rem;
  margin: .5rem 0; }
.card .fix { background: #f3f8f1; border-left: 3px solid #2e9d4f; padding: .25rem .5rem; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f7f9;
  padding: .5rem; border-radius: .3rem; font-size: .8rem; margin: .25rem 0;
  max-height: 32rem; overflow-y: auto; }
details { margin: .2rem 0; }
details > summary { cursor: pointer; }
.diff { font-family: ui-monospace, monospace; font-size: .8rem; background: #fafbfc;
  border: 1px solid #e3e5ea; border-radius: .3rem; margin: .5rem 0; }
.diff .file { background: #eef1f5; padding: .3rem .5rem; font-weight: 600; }
.diff .file .left-out { color: #b45309; font-weight: 600; margin-left: .5rem; }
.diff div.l { white-space: pre-wrap; overflow-wrap: anywhere; padding: 0 .5rem; }
.diff .add { background: #e6f6ea; } .diff .del { background: #fbe9e7; }
.diff .hunk { color: #6f42c1; background: #f4f0fb; } .diff .meta { color: #5f6670; }
.diff.excluded .file { background: #fdf2e3; }
dl.kv { display: grid; grid-template-columns: max-content 1fr; gap: .1rem 1rem;
  font-size: .9rem; }
dl.kv dt { color: #5f6670; } dl.kv dd { margin: 0; }
.event .t { color: #5f6670; font-variant-numeric: tabular-nums; margin-right: .4rem; }
.event .kind { font-weight: 600; margin-right: .4rem; }
.links a { display: inline-block; margin-right: .6rem; }
.better { color: #2e9d4f; } .worse { color: #c8412f; }
#verdict { font-weight: bold; } #verdict.regressed { color: #c8412f; }
#verdict.ok { color: #2e9d4f; }
@media (max-width: 40rem) {
  body { padding: 0 .5rem; }
}
"""
)
CSS += SUMMARY_CSS + cards_css("40rem")
