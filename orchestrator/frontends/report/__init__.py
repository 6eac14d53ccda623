"""Reports of a run directory: rich text for the terminal (:mod:`.text`), one self-contained
HTML file (:mod:`.html`), both from what :mod:`.data` reads of the run; the agreement with
the official harness (:mod:`.fidelity`, rendered by :mod:`.fidelity_text`) and the Markdown
report of a validation sweep (:mod:`.validation`).

An instance's duration is its ``timings["total"]`` when present, else the sum of its phase
timings.
"""

from orchestrator.frontends.report.data import (
    REPORT_FILE,
    compare,
    compare_runs,
    format_seconds,
    normalise_message,
    triage,
)
from orchestrator.frontends.report.explain import not_resolved, run_header, why
from orchestrator.frontends.report.html import render_html, write_html
from orchestrator.frontends.report.text import (
    caveats,
    print_report,
    render_comparison,
    render_text,
    verdict_line,
    verdict_text,
)

__all__ = [
    "REPORT_FILE",
    "caveats",
    "compare",
    "compare_runs",
    "format_seconds",
    "normalise_message",
    "not_resolved",
    "print_report",
    "render_comparison",
    "render_html",
    "render_text",
    "run_header",
    "triage",
    "verdict_line",
    "verdict_text",
    "why",
    "write_html",
]
