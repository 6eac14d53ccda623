"""Command groups of ``swe-green`` beyond the foundation: instances, validate, envs, run,
report, demo, participant, serve."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from orchestrator.errors import UserError
from orchestrator.frontends.cli_common import (
    Count,
    Dataset,
    Ids,
    Pattern,
    Repo,
    Shard,
    check_concurrency,
    check_writable,
    console,
    read_json,
    select_instances,
    start_cli_run,
)
from orchestrator.frontends.commands_run import demo_cmd, run_cmd
from orchestrator.frontends.live_progress import LiveProgress
from orchestrator.log import run_log
from orchestrator.settings import load_settings

instances_app = typer.Typer(help="Benchmark instances.", no_args_is_help=True)
envs_app = typer.Typer(help="The environment image cache.", no_args_is_help=True)


# --------------------------------------------------------------------------- instances
@instances_app.command("ls")
def instances_ls(
    ids: Ids = None, pattern: Pattern = None, repo: Repo = None, count: Count = None,
    shard: Shard = None, dataset: Dataset = None,
) -> None:  # fmt: skip
    """Print what a selection resolves to."""
    settings = load_settings(dataset=dataset)
    chosen = select_instances(settings, ids, pattern, repo, count, shard)
    table = Table("instance", "repo", "version", "F2P", "P2P", "difficulty")
    for inst in chosen:
        table.add_row(
            inst.instance_id, inst.repo, inst.version, str(len(inst.FAIL_TO_PASS)),
            str(len(inst.PASS_TO_PASS)), inst.difficulty or "",
        )  # fmt: skip
    console.print(table)
    console.print(f"{len(chosen)} instance(s)")


# --------------------------------------------------------------------------- validate
def validate_cmd(
    ids: Ids = None, pattern: Pattern = None, repo: Repo = None, count: Count = None,
    shard: Shard = None, dataset: Dataset = None,
    strategy: Annotated[str | None, typer.Option(help="auto, recipe or llm.")] = None,
    concurrency: Annotated[
        int, typer.Option(help="Instances at once.", callback=check_concurrency)
    ] = 1,
    runs: Annotated[
        int | None, typer.Option(help="Gold test runs per instance (flaky tests differ).")
    ] = None,
    resume: Annotated[
        Path | None, typer.Option(help="Continue a sweep: its run directory.")
    ] = None,
    skip_swept: Annotated[
        Path | None,
        typer.Option(help="A records file (.jsonl) of earlier sweeps: leave its instances out."),
    ] = None,
) -> None:  # fmt: skip
    """Build and validate the environments of a selection (gold patch check) with a summary.

    Each instance's outcome is kept in its run directory (validation.json); --resume skips
    the instances already done. `swe-green validation-report RUN` writes docs/validation.md.
    """
    from orchestrator.environments.sweep import run_sweep

    settings = load_settings(dataset=dataset, setup_strategy=strategy, validation_runs=runs)
    if resume is not None and not resume.is_dir():
        raise UserError(f"No sweep at {resume}.", "pass the run directory of a sweep.")
    if resume is not None and not any((ids, pattern, repo, count, shard)):
        ids = sweep_instances(resume)  # the sweep's own selection, not the whole dataset
    check_writable(settings, resume.parent if resume else None)
    chosen = select_instances(settings, ids, pattern, repo, count, shard)
    if skip_swept is not None:
        chosen = _not_swept(chosen, skip_swept)
    ctx = start_cli_run(
        settings, "validate", resume, None, command="validate",
        instances=[i.instance_id for i in chosen],
    )  # fmt: skip
    run_dir, run_id = ctx.run_dir.path, ctx.run_id
    console.print(f"validating {len(chosen)} instance(s) in {run_dir}")

    progress = LiveProgress(len(chosen))
    from orchestrator.housekeeping.active import active_run

    def done(record) -> None:  # noqa: ANN001
        outcome = "ok" if record.ok else "environment error"
        progress.count(outcome)
        mark = "[green]ok[/]" if record.ok else f"[red]{record.cause}[/]"
        progress.finished(record.instance_id, mark, sum(record.timings.values()))
        progress.refresh()

    with (
        run_log(ctx.run_dir.path) as log_path,
        active_run(settings.storage.data_dir, run_id, [inst.instance_id for inst in chosen]),
        progress.live_display(),
    ):
        records = run_sweep(ctx, chosen, concurrency, on_done=done)
    table = Table("instance", "outcome", "detail", "seconds")
    for r in sorted(records, key=lambda r: r.instance_id):
        outcome = "ok" if r.ok else f"environment error ({r.cause})"
        table.add_row(r.instance_id, outcome, r.message[:160], f"{sum(r.timings.values()):.0f}")
    console.print(table)
    good = sum(r.ok for r in records)
    console.print(f"{good}/{len(records)} environment(s) valid; logs under {run_dir}")
    console.print(f"log: {log_path}")


def sweep_instances(run_dir: Path) -> list[str] | None:
    """The instance ids a sweep chose (its ``config.json``), ``None`` if it names none."""
    config = run_dir / "config.json"
    instances = read_json(config).get("instances") if config.is_file() else None
    return list(instances) if instances else None


def _not_swept(chosen: list, records_file: Path) -> list:
    """``chosen`` without the instances a records file of earlier sweeps holds."""
    from orchestrator.environments.sweep import load_records

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
    """The Markdown report of a validation sweep (docs/validation.md)."""
    from orchestrator.environments.sweep import load_records, merge_records
    from orchestrator.environments.sweep import save_records as write_records
    from orchestrator.frontends.report.validation import validation_markdown

    for run in runs:
        if not run.exists():
            raise UserError(f"No sweep at {run}.", "pass a sweep's run directory or records file.")
    records = merge_records(*(load_records(run) for run in runs))
    if not records:
        joined = ", ".join(map(str, runs))
        raise UserError(f"No validation records in {joined}.", "run `swe-green validate` first.")
    if save_records is not None:
        write_records(records, save_records)
    run_paths = " ".join(map(str, runs))
    if notes is not None and not notes.is_file():
        raise UserError(f"No notes file at {notes}.", "pass a Markdown file, or leave --notes out.")
    command = f"swe-green validation-report {run_paths} --out {out or 'docs/validation.md'}" + (
        f" --notes {notes}" if notes else ""
    )
    text = validation_markdown(
        records, title, command, selection_total=total,
        notes=notes.read_text() if notes else None,
    )  # fmt: skip
    if out is None:
        console.print(text, markup=False, highlight=False)
    else:
        out.write_text(text)
        console.print(f"wrote {out}")


# --------------------------------------------------------------------------- envs
@envs_app.command("ls")
def envs_ls() -> None:
    """List the cached environment and instance images, least recently used first."""
    from orchestrator.housekeeping.prune import cached_images
    from orchestrator.sandbox.factory import backend_from

    settings = load_settings()
    table = Table("image", "kind", "own size", "last used")
    images = cached_images(
        backend_from(settings), settings.storage.data_dir, settings.environment.image_prefix
    )
    for image in images:
        table.add_row(image.tag, image.kind, _size(image.size), _ago(image.last_used))
    console.print(table)
    console.print(f"{len(images)} image(s), {_size(sum(i.size for i in images))}")


@envs_app.command("prune")
def envs_prune(
    keep_days: Annotated[
        float | None,
        typer.Option("--keep-days", metavar="N", help="Remove images unused for N days."),
    ] = None,
    max_size: Annotated[
        str | None,
        typer.Option(
            "--max-size", metavar="SIZE",
            help="Then remove the least recently used until the rest fit, e.g. 200G.",
        ),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only say what would go.")] = False,
) -> None:  # fmt: skip
    """Remove cached environment and instance images, least recently used first (all of them
    without --keep-days/--max-size), never those of a run in progress."""
    from pydantic import ByteSize, TypeAdapter, ValidationError

    from orchestrator.housekeeping.prune import execute_prune, plan_prune
    from orchestrator.sandbox.factory import backend_from

    limit = None
    if max_size is not None:
        try:
            limit = int(TypeAdapter(ByteSize).validate_python(max_size))
        except ValidationError:
            raise UserError(
                f"--max-size {max_size!r} is not a size.", "write it like 200G, 500MB or 1.5T."
            ) from None
    if keep_days is not None and keep_days < 0:
        raise UserError("--keep-days must be 0 or more.", "pass a number of days, e.g. 14.")
    settings = load_settings()
    backend = backend_from(settings)
    plan = plan_prune(
        backend,
        settings.storage.data_dir,
        settings.environment.image_prefix,
        keep_days=keep_days,
        max_size=limit,
    )
    removed = [image.tag for image in plan.remove]
    if not dry_run:
        removed = execute_prune(backend, settings.storage.data_dir, plan)
    verb = "would remove" if dry_run else "removed"
    console.print(
        f"{verb} {len(removed)} image(s), {_size(plan.freed)}; "
        f"{len(plan.keep)} kept, {_size(plan.kept_size)}"
    )
    for image in plan.remove:
        console.print(f"  - {image.tag}  {_size(image.size)}  last used {_ago(image.last_used)}")
    for name in plan.containers:
        console.print(f"  - container {name} (used a removed image)")
    for image in plan.keep:
        if image.protected:
            console.print(f"  kept {image.tag}: {image.protected}")


def _size(size: int) -> str:
    from pydantic import ByteSize

    return ByteSize(size).human_readable(decimal=True)


def _ago(epoch: float) -> str:
    days = (time.time() - epoch) / 86400
    return f"{days:.1f} days ago" if days >= 1 else f"{days * 24:.1f} h ago"


# --------------------------------------------------------------------------- report
def report_cmd(
    run: Annotated[Path, typer.Argument(help="A run directory.")],
    html: Annotated[bool, typer.Option("--html", help="Write report.html.")] = False,
    compare: Annotated[
        Path | None,
        typer.Option(
            "--compare",
            metavar="OTHER_RUN",
            help="A baseline run: print what changed; exit 1 when something regressed.",
        ),
    ] = None,
    official: Annotated[
        Path | None,
        typer.Option(
            "--official",
            metavar="DIR_OR_FILE",
            help="Official harness results (report.json tree or JSONL): print the agreement.",
        ),
    ] = None,
    fidelity_out: Annotated[
        Path | None,
        typer.Option("--fidelity-out", help="With --official: write the report as Markdown."),
    ] = None,
    fidelity_notes: Annotated[
        Path | None,
        typer.Option("--fidelity-notes", help="Markdown appended to --fidelity-out (analysis)."),
    ] = None,
) -> None:
    """A run's report; with --compare, what changed against another run (verdict first).

    The leaderboard row, statuses, errors by cause, why each instance is not resolved,
    repositories, slowest instances; with --compare, the verdict on the first line. Exit
    status with --compare: 0 no regression, 1 regressed (an instance no longer resolved, or a
    new error), 2 nothing in common to compare."""
    from orchestrator.frontends.report import (
        compare_runs,
        print_report,
        render_comparison,
        verdict_text,
        write_html,
    )
    from orchestrator.run.results import RunDir

    for path in (run, compare):
        if path is not None and not (
            (path / "instances").is_dir() or (path / "config.json").is_file()
        ):
            raise UserError(
                f"{path} is not a run directory.",
                "pass the path `swe-green run` printed.",
            )
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
    if comparison is not None and not comparison.common:
        raise typer.Exit(2)
    if comparison is not None and comparison.regressed:
        raise typer.Exit(1)


def _fidelity(run, official: Path, out: Path | None, notes: Path | None) -> None:  # noqa: ANN001
    """Print (and with ``out`` write) the run's agreement with the official results."""
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
        text = render_markdown(fidelity, title, _run_facts(run, official))
        if notes is not None:
            text += "\n" + notes.read_text(encoding="utf-8")
        out.write_text(text, encoding="utf-8")
        console.print(f"fidelity report: {out}")


def _run_facts(run, official: Path) -> str:  # noqa: ANN001 - a RunDir
    """What was graded, how, and how long it took (start to last result), for the report."""
    config = run.read_config()
    results = sorted(
        (run.path / "instances").glob("*/result.json"), key=lambda p: p.stat().st_mtime
    )
    wall = (
        results[-1].stat().st_mtime - run.config_path.stat().st_mtime
        if results and run.config_path.is_file()
        else 0.0
    )
    source = config.get("predictions") or config.get("participant") or "?"
    return (
        f"Run `{config.get('run_id', run.path.name)}` graded `{source}` (participant "
        f"`{config.get('participant_id', '?')}`, {len(results)} instance results, concurrency "
        f"{config.get('concurrency') or 'default'}); wall time from the run's start to its last "
        f"result: {wall / 60:.0f} min. Official results: `{official}`. Generated by "
        f"`swe-green report RUN --official ... --fidelity-out ...`."
    )


def register(app: typer.Typer) -> None:
    """Add these commands to the main app."""
    app.add_typer(instances_app, name="instances")
    app.add_typer(envs_app, name="envs")
    app.command("validate")(validate_cmd)
    app.command("validation-report")(validation_report_cmd)
    app.command("run")(run_cmd)
    app.command("report")(report_cmd)
    app.command("demo")(demo_cmd)
    from orchestrator.participant.reference.cli import app as participant_app

    app.add_typer(participant_app, name="participant", help="Reference participants.")
    with contextlib.suppress(ImportError):
        from orchestrator.frontends.server import serve_command

        app.command("serve")(serve_command)
