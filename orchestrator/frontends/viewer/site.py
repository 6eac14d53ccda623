"""Writing the run viewer into a run directory: ``viewer/index.html`` (the overview),
``viewer/i/<instance>.html`` (one page per instance), ``viewer/compare-<baseline>.html`` (a
comparison with a baseline run) and the style sheet they share. Plain files that open from
disk: relative links only, no server, no script from elsewhere."""

from __future__ import annotations

import os
from pathlib import Path

from orchestrator.context.run_dir import INSTANCES_DIR, RunDir, atomic_write_text
from orchestrator.frontends.report.data import Comparison, load_run
from orchestrator.frontends.viewer.comparison_page import comparison_file, render_comparison_page
from orchestrator.frontends.viewer.instance_page import render_instance
from orchestrator.frontends.viewer.overview_page import render_overview
from orchestrator.frontends.viewer.parts import INSTANCE_PAGES, STYLE_FILE, VIEWER_DIR
from orchestrator.frontends.viewer.style import CSS


def write_viewer(
    run_dir: RunDir | str | os.PathLike[str], comparison: Comparison | None = None
) -> Path:
    """Write the run's viewer (and with ``comparison`` its comparison page); return the
    overview's path. Comparison pages written before stay linked from the overview."""
    run, results = load_run(run_dir)
    root = run.path / VIEWER_DIR
    pages = root / INSTANCE_PAGES
    pages.mkdir(parents=True, exist_ok=True)
    atomic_write_text(root / STYLE_FILE, CSS)
    for result in results:
        instance_dir = run.path / INSTANCES_DIR / result.instance_id
        atomic_write_text(
            pages / f"{result.instance_id}.html", render_instance(result, instance_dir)
        )
    if comparison is not None:
        local = {r.instance_id for r in results}
        page_file = root / comparison_file(comparison.baseline)
        atomic_write_text(page_file, render_comparison_page(comparison, local))
    comparisons = sorted(
        (p.name, p.stem.removeprefix("compare-")) for p in root.glob("compare-*.html")
    )
    index = root / "index.html"
    atomic_write_text(index, render_overview(run, results, comparisons))
    return index
