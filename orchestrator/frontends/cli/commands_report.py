"""``swe-green report``: a run's report, its comparison with another run, and its agreement
with the official harness."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.errors import UserError
from orchestrator.frontends.cli.common import console, err_console, path_in_doc

CompareWith = Annotated[
    Path | None,
    typer.Option(
        "--compare",
        metavar="OTHER_RUN",
        help="A baseline run: print what changed; exit 1 when something regressed.",
    ),
]
Official = Annotated[
    Path | None,
    typer.Option(
        "--official",
        metavar="DIR_OR_FILE",
        help="Official harness results (report.json tree or JSONL): print the agreement.",
    ),
]
FidelityOut = Annotated[
    Path | None,
    typer.Option("--fidelity-out", help="With --official: write the report as Markdown."),
]
FidelityNotes = Annotated[
    Path | None,
    typer.Option("--fidelity-notes", help="Markdown appended to --fidelity-out (analysis)."),
]


def report_cmd(
    run: Annotated[Path, typer.Argument(help="A run directory.")],
    html: Annotated[bool, typer.Option("--html", help="Write report.html.")] = False,
    viewer: Annotated[
        bool,
        typer.Option(
            "--viewer",
            help="Write the run viewer (RUN/viewer/index.html, a page per instance; with "
            "--compare a comparison page).",
        ),
    ] = False,
    compare: CompareWith = None,
    official: Official = None,
    fidelity_out: FidelityOut = None,
    fidelity_notes: FidelityNotes = None,
) -> None:
    """A run's report; with --compare, what changed against another run (verdict first).

    The leaderboard row, statuses, errors by cause, why each instance is not resolved,
    repositories, slowest instances; with --compare, the verdict on the first line. Exit
    status with --compare: 0 no regression, 1 regressed (an instance no longer resolved, or a
    new error), 2 nothing in common to compare."""
    from orchestrator.context.run_dir import RunDir
    from orchestrator.frontends.report import (
        compare_runs,
        print_report,
        render_comparison,
        verdict_text,
        write_html,
    )
    from orchestrator.run.outcome import EXIT_REGRESSION, EXIT_USAGE

    for path in (run, compare):
        if path is not None:
            _check_run_dir(path)
    _check_something_finished(RunDir(run))
    comparison = compare_runs(run, compare) if compare is not None else None
    if comparison is not None:
        console.print(verdict_text(comparison), soft_wrap=True)  # a mail's first line
    print_report(RunDir(run), console=console)
    if comparison is not None:
        console.print(render_comparison(comparison))
    if official is not None:
        _fidelity(RunDir(run), official, fidelity_out, fidelity_notes)
    if html:
        console.print(f"HTML report: {write_html(RunDir(run), comparison)}")
    if viewer:
        from orchestrator.frontends.viewer import write_viewer

        console.print(f"run viewer: {write_viewer(RunDir(run), comparison)}")
    if comparison is not None and not comparison.common:
        raise typer.Exit(EXIT_USAGE)
    if comparison is not None and comparison.regressed:
        raise typer.Exit(EXIT_REGRESSION)


def _check_run_dir(path: Path) -> None:
    if not ((path / "instances").is_dir() or (path / "config.json").is_file()):
        raise UserError(
            f"{path} is not a run directory.",
            "pass the path `swe-green run` printed.",
        )


def _check_something_finished(run) -> None:  # noqa: ANN001 - a RunDir
    """A run with no result at all (killed before its first instance finished) has no
    report: say so, and how to grade it, with exit status 3 (graded nothing)."""
    from orchestrator.run.outcome import EXIT_NOTHING_GRADED

    if run.load_results():
        return
    selected = len(run.read_config().get("instances") or [])
    of = f" of the {selected} selected" if selected else ""
    err_console.print(
        f"Nothing finished in run {run.path}: no instance{of} has a result (the run was "
        f"interrupted before its first result), so there is nothing to report. Fix: "
        f"`swe-green run --resume {run.path}` grades them.",
        highlight=False, soft_wrap=True,
    )  # fmt: skip
    raise typer.Exit(EXIT_NOTHING_GRADED)


def _fidelity(run, official: Path, out: Path | None, notes: Path | None) -> None:  # noqa: ANN001
    """Print (and with ``out`` write) the run's agreement with the official results. The
    page names the files it quotes by :func:`path_in_doc`: no path of this host."""
    from orchestrator.atomic import atomic_write_text
    from orchestrator.frontends.report.fidelity import (
        compare_official,
        load_official,
    )
    from orchestrator.frontends.report.fidelity_text import render_markdown, summary_lines

    fidelity = compare_official(run.load_results(), load_official(official))
    console.rule("Agreement with the official harness")
    for line in summary_lines(fidelity):
        console.print(line, highlight=False, markup=False)
    if out is not None:
        title = f"Fidelity: run {run.path.name} against {official.name}"
        text = render_markdown(fidelity, title, _run_facts(run, official, out))
        if notes is not None:
            text += "\n" + notes.read_text(encoding="utf-8")
        atomic_write_text(out, text)
        console.print(f"fidelity report: {out}")


def _run_facts(run, official: Path, page: Path) -> str:  # noqa: ANN001 - a RunDir
    """What was graded, how, and how long it took (start to last result), for the report
    ``page`` (the files named as :func:`path_in_doc` says)."""
    config = run.read_config()
    results = sorted(
        (run.path / "instances").glob("*/result.json"), key=lambda p: p.stat().st_mtime
    )
    wall = (
        results[-1].stat().st_mtime - run.config_path.stat().st_mtime
        if results and run.config_path.is_file()
        else 0.0
    )
    predictions = config.get("predictions")  # written absolute by `swe-green run`
    source = path_in_doc(predictions, page) if predictions else config.get("participant") or "?"
    return (
        f"Run `{config.get('run_id', run.path.name)}` graded `{source}` (participant "
        f"`{config.get('participant_id', '?')}`, {len(results)} instance results, concurrency "
        f"{config.get('concurrency') or 'default'}); wall time from the run's start to its last "
        f"result: {wall / 60:.0f} min. Official results: `{path_in_doc(official, page)}`. "
        "Generated by `swe-green report RUN --official ... --fidelity-out ...`."
    )
