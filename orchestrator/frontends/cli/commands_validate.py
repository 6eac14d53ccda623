"""``swe-green validate`` (a validation sweep) and ``swe-green validation-report``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from orchestrator.errors import UserError
from orchestrator.frontends.cli.common import (
    Count,
    Dataset,
    Ids,
    Pattern,
    Repo,
    Shard,
    check_concurrency,
    check_writable,
    console,
    err_console,
    path_in_doc,
    read_json,
    select_instances,
    start_cli_run,
)

if TYPE_CHECKING:
    from rich.table import Table

    from orchestrator.validation.sweep import SweepRecord

Strategy = Annotated[str | None, typer.Option(help="auto, recipe, infer or llm.")]
Concurrency = Annotated[int, typer.Option(help="Instances at once.", callback=check_concurrency)]
GoldRuns = Annotated[
    int | None, typer.Option(help="Gold test runs per instance (flaky tests differ).")
]
ResumeSweep = Annotated[Path | None, typer.Option(help="Continue a sweep: its run directory.")]
SkipSwept = Annotated[
    Path | None,
    typer.Option(help="A records file (.jsonl) of earlier sweeps: leave its instances out."),
]


def validate_cmd(
    ids: Ids = None, pattern: Pattern = None, repo: Repo = None, count: Count = None,
    shard: Shard = None, dataset: Dataset = None, strategy: Strategy = None,
    concurrency: Concurrency = 1, runs: GoldRuns = None, resume: ResumeSweep = None,
    skip_swept: SkipSwept = None,
) -> None:  # fmt: skip
    """Build and validate the environments of a selection (gold patch check) with a summary.

    Each instance's outcome is kept in its run directory (validation.json); --resume skips
    the instances already done. `swe-green validation-report RUN` writes docs/validation.md.
    """
    from orchestrator.frontends.cli.live_progress import LiveProgress
    from orchestrator.log import run_log
    from orchestrator.run.outcome import EXIT_NOTHING_GRADED
    from orchestrator.run.validation_sweep import run_sweep
    from orchestrator.settings import load_settings

    settings = load_settings(dataset=dataset, setup_strategy=strategy, validation_runs=runs)
    if resume is not None and not resume.is_dir():
        raise UserError(f"No sweep at {resume}.", "pass the run directory of a sweep.")
    if resume is not None and not any((ids, pattern, repo, count, shard)):
        ids = sweep_instances(resume)  # the sweep's own selection, not the whole dataset
    check_writable(settings, resume, "--resume")
    chosen = select_instances(settings, ids, pattern, repo, count, shard)
    if skip_swept is not None:
        chosen = _not_swept(chosen, skip_swept)
    ctx = start_cli_run(
        settings, "validate", resume, None, command="validate",
        instances=[i.instance_id for i in chosen],
    )  # fmt: skip
    run_dir = ctx.run_dir.path
    console.print(f"validating {len(chosen)} instance(s) in {run_dir}")

    progress = LiveProgress(len(chosen))

    def done(record) -> None:  # noqa: ANN001
        outcome = "ok" if record.ok else "environment error"
        progress.count(outcome)
        mark = "[green]ok[/]" if record.ok else f"[red]{record.cause}[/]"
        progress.finished(record.instance_id, mark, sum(record.timings.values()))
        progress.refresh()

    # the run is marked in progress by its driver (run.scheduler.drive), as an evaluation is
    with run_log(ctx.run_dir.path) as log_path, progress.live_display():
        records = run_sweep(ctx, chosen, concurrency, on_done=done)
    console.print(summary_table(records))
    good = sum(r.ok for r in records)
    console.print(f"{good}/{len(records)} environment(s) valid; logs under {run_dir}")
    console.print(f"log: {log_path}")
    if records and not good:
        err_console.print("no environment valid (exit status 3); see the detail above.")
        raise typer.Exit(EXIT_NOTHING_GRADED)


def summary_table(records: list[SweepRecord]) -> Table:
    """A sweep's outcome per instance; long ids and details fold onto more lines (whole,
    at 80 columns too), the seconds never wrap."""
    from orchestrator.frontends.cli.tables import plain_table

    table = plain_table(
        ("instance", "keep"), ("outcome", "fold"), ("detail", "fold"), ("seconds", "keep")
    )
    for r in sorted(records, key=lambda r: r.instance_id):
        outcome = "ok" if r.ok else f"environment error ({r.cause})"
        table.add_row(r.instance_id, outcome, r.message[:600], f"{sum(r.timings.values()):.0f}")
    return table


def sweep_instances(run_dir: Path) -> list[str] | None:
    """The instance ids a sweep chose (its ``config.json``), ``None`` if it names none."""
    config = run_dir / "config.json"
    instances = read_json(config).get("instances") if config.is_file() else None
    return list(instances) if instances else None


def _not_swept(chosen: list, records_file: Path) -> list:
    """``chosen`` without the instances a records file of earlier sweeps holds."""
    from orchestrator.validation.sweep import load_records

    if not records_file.is_file():
        raise UserError(f"No records file at {records_file}.", "pass a .jsonl of records.")
    done = {record.instance_id for record in load_records(records_file)}
    return [inst for inst in chosen if inst.instance_id not in done]


def validation_report_cmd(
    runs: Annotated[
        list[Path],
        typer.Argument(
            help="Run directories of validation sweeps and/or records files (.jsonl); a later "
            "one's record of an instance replaces an earlier one's."
        ),
    ],
    out: Annotated[Path | None, typer.Option(help="Write the Markdown here.")] = None,
    title: Annotated[str, typer.Option()] = "Validation sweep",
    total: Annotated[
        int | None,
        typer.Option(help="Instances in the sweep's selection (to say how many remain)."),
    ] = None,
    notes: Annotated[
        Path | None,
        typer.Option(help="A hand-written Markdown analysis to append (kept when regenerating)."),
    ] = None,
    save_records: Annotated[
        Path | None,
        typer.Option(help="Also write the merged records here (JSON lines), e.g. to commit."),
    ] = None,
) -> None:
    """The Markdown report of a validation sweep (docs/validation.md).

    The page's command names the runs and files relative to the root of the repository that
    holds the page, or by their names alone when outside it: no path of this host."""
    from orchestrator.atomic import atomic_write_text
    from orchestrator.frontends.report.validation import validation_markdown
    from orchestrator.validation.sweep import load_records, merge_records
    from orchestrator.validation.sweep import save_records as write_records

    for run in runs:
        if not run.exists():
            raise UserError(f"No sweep at {run}.", "pass a sweep's run directory or records file.")
    records = merge_records(*(load_records(run) for run in runs))
    if not records:
        joined = ", ".join(map(str, runs))
        raise UserError(f"No validation records in {joined}.", "run `swe-green validate` first.")
    if save_records is not None:
        write_records(records, save_records)
    if notes is not None and not notes.is_file():
        raise UserError(f"No notes file at {notes}.", "pass a Markdown file, or leave --notes out.")
    page = out or Path("docs/validation.md")  # where the page goes when it is written
    command = " ".join(
        ["swe-green validation-report", *(path_in_doc(run, page) for run in runs),
         "--out", path_in_doc(out, out) if out else str(page),
         *(["--notes", path_in_doc(notes, page)] if notes else [])]
    )  # fmt: skip
    text = validation_markdown(
        records, title, command, selection_total=total,
        notes=notes.read_text() if notes else None,
    )  # fmt: skip
    if out is None:
        console.print(text, markup=False, highlight=False)
    else:
        atomic_write_text(out, text)
        console.print(f"wrote {out}")
