"""Command groups of ``swe-green`` beyond the foundation: instances, validate, envs, run,
report, demo, participant, serve."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table

from .errors import UserError
from .log import run_log
from .settings import Settings, load_settings

console = Console()
err_console = Console(stderr=True)

instances_app = typer.Typer(help="Benchmark instances.", no_args_is_help=True)
envs_app = typer.Typer(help="The environment image cache.", no_args_is_help=True)

Ids = Annotated[
    list[str] | None, typer.Option("--id", "--instance", help="Instance id (repeatable).")
]
Pattern = Annotated[str | None, typer.Option(help="fnmatch pattern on instance ids.")]
Repo = Annotated[str | None, typer.Option(help="Only this repository (owner/name or name).")]
Count = Annotated[int | None, typer.Option(help="The first N instances of the selection.")]
Shard = Annotated[str | None, typer.Option(help="Shard i/n of the selection (1-based).")]
Dataset = Annotated[str | None, typer.Option(help="Dataset name or local .jsonl/.parquet.")]


def _settings(**overrides: object) -> Settings:
    return load_settings(**overrides)


def _select(settings: Settings, ids, pattern, repo, count, shard):  # noqa: ANN001, ANN202
    from .instances import Selection, resolve

    return resolve(
        settings, Selection(ids=ids, pattern=pattern, repo=repo, count=count, shard=shard)
    )


def _context(settings: Settings, run_dir: Path, run_id: str):  # noqa: ANN202
    from .context import RunContext
    from .docker_engine import connect
    from .results import RunDir

    return RunContext(settings, connect(), run_id, RunDir(run_dir))


# --------------------------------------------------------------------------- instances
@instances_app.command("ls")
def instances_ls(
    ids: Ids = None, pattern: Pattern = None, repo: Repo = None, count: Count = None,
    shard: Shard = None, dataset: Dataset = None,
) -> None:  # fmt: skip
    """Print what a selection resolves to."""
    settings = _settings(dataset=dataset)
    chosen = _select(settings, ids, pattern, repo, count, shard)
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
    concurrency: Annotated[int, typer.Option(help="Instances at once.")] = 1,
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
    from .sweep import run_sweep

    settings = _settings(dataset=dataset, setup_strategy=strategy, validation_runs=runs)
    chosen = _select(settings, ids, pattern, repo, count, shard)
    if skip_swept is not None:
        from .sweep import load_records

        if not skip_swept.is_file():
            raise UserError(f"No records file at {skip_swept}.", "pass a .jsonl of records.")
        done = {record.instance_id for record in load_records(skip_swept)}
        chosen = [inst for inst in chosen if inst.instance_id not in done]
    if resume is not None:
        if not resume.is_dir():
            raise UserError(f"No sweep at {resume}.", "pass the run directory of a sweep.")
        run_dir, run_id = resume, resume.name
    else:
        run_id = f"validate-{_stamp()}"
        run_dir = settings.runs_dir / run_id
    ctx = _context(settings, run_dir, run_id)
    console.print(f"validating {len(chosen)} instance(s) in {run_dir}")

    progress = _LiveProgress(len(chosen))
    from .housekeeping import active_run

    def done(record) -> None:  # noqa: ANN001
        outcome = "ok" if record.ok else "environment error"
        progress.count(outcome)
        mark = "[green]ok[/]" if record.ok else f"[red]{record.cause}[/]"
        progress.finished(record.instance_id, mark, sum(record.timings.values()))
        progress.refresh()

    with (
        run_log(ctx.run_dir.path) as log_path,
        active_run(settings.data_dir, run_id, [inst.instance_id for inst in chosen]),
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
    from .sweep import load_records, merge_records, validation_markdown
    from .sweep import save_records as write_records

    for run in runs:
        if not run.exists():
            raise UserError(f"No sweep at {run}.", "pass a sweep's run directory or records file.")
    records = merge_records(*(load_records(run) for run in runs))
    if not records:
        joined = ", ".join(map(str, runs))
        raise UserError(f"No validation records in {joined}.", "run `swe-green validate` first.")
    if save_records is not None:
        write_records(records, save_records)
    run = " ".join(map(str, runs))
    if notes is not None and not notes.is_file():
        raise UserError(f"No notes file at {notes}.", "pass a Markdown file, or leave --notes out.")
    command = f"swe-green validation-report {run} --out {out or 'docs/validation.md'}" + (
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
    from .docker_engine import connect
    from .housekeeping import cached_images

    settings = _settings()
    table = Table("image", "kind", "own size", "last used")
    images = cached_images(connect(), settings.data_dir, settings.image_prefix)
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

    from .docker_engine import connect
    from .housekeeping import execute_prune, plan_prune

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
    settings = _settings()
    client = connect()
    plan = plan_prune(
        client, settings.data_dir, settings.image_prefix, keep_days=keep_days, max_size=limit
    )
    removed = [image.tag for image in plan.remove]
    if not dry_run:
        removed = execute_prune(client, settings.data_dir, plan)
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


# --------------------------------------------------------------------------- run
def _stamp() -> str:
    return dt.datetime.now().strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:4]


@contextlib.contextmanager
def _participant(spec: str, settings: Settings) -> Iterator[str]:
    """A participant URL; a reference participant's name starts it for the run."""
    if spec.startswith(("http://", "https://")):
        yield spec
        return
    from .participants import KINDS, make_participant, running

    if spec not in KINDS:
        raise UserError(
            f"{spec!r} is neither a URL nor a reference participant.",
            f"pass an http(s) URL or one of: {', '.join(KINDS)}.",
        )
    with running(make_participant(spec, dataset=settings.dataset)) as url:
        yield url


def run_cmd(
    participant: Annotated[
        str | None,
        typer.Option(help="Participant A2A URL, or a reference participant: gold, empty."),
    ] = None,
    ids: Ids = None, pattern: Pattern = None, repo: Repo = None, count: Count = None,
    shard: Shard = None, dataset: Dataset = None,
    concurrency: Annotated[int | None, typer.Option(help="Instances at once.")] = None,
    strategy: Annotated[str | None, typer.Option(help="Setup: auto, recipe or llm.")] = None,
    instance_timeout: Annotated[float | None, typer.Option(help="Participant s/instance.")] = None,
    test_timeout: Annotated[float | None, typer.Option(help="Seconds per test run.")] = None,
    no_validate: Annotated[bool, typer.Option("--no-validate")] = False,
    output: Annotated[Path | None, typer.Option(help="Run directory.")] = None,
    participant_id: Annotated[str | None, typer.Option(help="Id in results.json.")] = None,
    resume: Annotated[Path | None, typer.Option(help="Continue an interrupted run.")] = None,
) -> None:  # fmt: skip
    """Evaluate a participant on a selection of instances (batch job)."""
    from .instances import Selection, resolve
    from .report import print_report
    from .scheduler import run_evaluation

    overrides: dict[str, object] = {
        "dataset": dataset, "setup_strategy": strategy, "instance_timeout": instance_timeout,
        "test_timeout": test_timeout, "validate_env": False if no_validate else None,
    }  # fmt: skip
    if resume is not None:
        run_dir = resume
        if not (run_dir / "config.json").exists():
            raise UserError(f"{run_dir} is not a run directory.", "pass the path `run` printed.")
        saved = _read_json(run_dir / "config.json")
        overrides = {**saved.get("settings_overrides", {}), **_present(overrides)}
        participant = participant or saved.get("participant")
        selection = Selection(**saved.get("selection", {}))
        participant_id = participant_id or saved.get("participant_id")
        concurrency = concurrency or saved.get("concurrency")
    else:
        selection = Selection(ids=ids, pattern=pattern, repo=repo, count=count, shard=shard)
    if not participant:
        raise UserError("No participant given.", "pass --participant URL (or gold / empty).")
    settings = _settings(**overrides)
    instances = resolve(settings, selection)
    run_id = saved["run_id"] if resume else f"run-{_stamp()}"
    run_dir = resume or output or settings.runs_dir / run_id
    ctx = _context(settings, run_dir, run_id)
    if settings.setup_strategy == "llm":
        from .setup_llm import check_llm_settings

        check_llm_settings(settings)
    ctx.run_dir.write_config(
        {
            "run_id": run_id, "participant": participant, "participant_id": participant_id,
            "selection": selection.model_dump(exclude_none=True), "concurrency": concurrency,
            "settings_overrides": _present(overrides),
            "instances": [i.instance_id for i in instances],
        }
    )  # fmt: skip
    console.print(f"run {run_id}: {len(instances)} instance(s) -> {run_dir}")
    progress = _LiveProgress(len(instances))
    # the live display owns the terminal; the log goes to <run>/run.log (stderr with -v)
    with run_log(run_dir) as log_path, _participant(participant, settings) as url:
        _check_reachable(url)
        try:
            with progress.live_display():
                results = asyncio.run(
                    _run_interruptible(
                        run_evaluation(
                            ctx, instances, url, concurrency=concurrency,
                            on_event=progress.update, resume=resume is not None,
                        ),
                        ctx,
                    )
                )  # fmt: skip
        except KeyboardInterrupt:
            from .scheduler import clean_unfinished

            clean_unfinished(ctx, ctx.run_dir.finished_ids())
            err_console.print(
                f"interrupted: finished results kept in {run_dir}; continue with "
                f"`swe-green run --resume {run_dir}`"
            )
            raise typer.Exit(130) from None
    name = participant_id or _participant_name(participant)
    path = ctx.run_dir.write_leaderboard("agent", name, results)
    print_report(ctx.run_dir, console=console)
    console.print(f"log: {log_path}")
    console.print(f"results: {path}")


async def _run_interruptible(coro, ctx):  # noqa: ANN001, ANN202
    """Run ``coro``; on SIGTERM behave as on Ctrl-C."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(coro)
    with contextlib.suppress(NotImplementedError):
        loop.add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        return await task
    except asyncio.CancelledError:
        raise KeyboardInterrupt from None


def _check_reachable(url: str) -> None:
    """Fail the run up front when nothing answers at the participant's URL."""
    import httpx

    card = url.rstrip("/") + "/.well-known/agent-card.json"
    try:
        httpx.get(card, timeout=15)
    except httpx.HTTPError as exc:
        raise UserError(
            f"The participant at {url} does not answer ({exc.__class__.__name__}: {exc}).",
            "start the participant, or check --participant.",
        ) from None


def _participant_name(spec: str) -> str:
    return spec if not spec.startswith("http") else spec.rstrip("/").rsplit("/", 1)[-1] or spec


def _present(values: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in values.items() if v is not None}


def _read_json(path: Path) -> dict:
    import json

    return json.loads(path.read_text())


class _LiveProgress:
    """The live display of ``run``/``validate``: a progress bar with the statuses so far and
    the ETA, the instances in flight with their phase, and one printed line per finished
    instance (the lines stay, above the bar)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.statuses: dict[str, int] = {}
        self.in_flight: dict[str, str] = {}
        self.started = time.monotonic()
        self.live: Live | None = None

    @contextlib.contextmanager
    def live_display(self) -> Iterator[None]:
        with Live(self.render(), console=console, refresh_per_second=2, transient=True) as live:
            self.live = live
            try:
                yield
            finally:
                self.live = None

    def update(self, event) -> None:  # noqa: ANN001 - a scheduler.ProgressEvent
        self.done, self.total = event.done, event.total or self.total
        self.statuses, self.in_flight = dict(event.statuses), dict(event.in_flight)
        if event.kind == "finished" and event.result is not None:
            r = event.result
            self.finished(
                r.instance_id,
                f"[bold]{r.status}[/]" + (f" ({r.reason})" if r.reason else ""),
                r.timings.get("total", 0),
            )
        self.refresh()

    def phase(self, instance_id: str, phase: str) -> None:
        self.in_flight[instance_id] = phase
        self.refresh()

    def finished(self, instance_id: str, outcome: str, seconds: float) -> None:
        """Print the one line of a finished instance (``update`` counts it)."""
        self.in_flight.pop(instance_id, None)
        console.print(f"  {self.done}/{self.total} {instance_id}: {outcome} in {seconds:.0f}s")

    def count(self, status: str) -> None:
        """Count a finished instance (for callers without progress events)."""
        self.done += 1
        self.statuses[status] = self.statuses.get(status, 0) + 1

    def refresh(self) -> None:
        if self.live is not None:
            self.live.update(self.render())

    def render(self) -> Table:
        table = Table.grid(padding=(0, 1))
        eta = ""
        if self.done and self.done < self.total:
            elapsed = time.monotonic() - self.started
            from .report import format_seconds

            eta = f"ETA {format_seconds(elapsed / self.done * (self.total - self.done))}"
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(self.statuses.items()))
        table.add_row(
            ProgressBar(total=max(self.total, 1), completed=self.done, width=30),
            f"[bold]{self.done}/{self.total}[/]",
            statuses,
            eta,
        )
        for instance_id, phase in self.in_flight.items():
            table.add_row("", f"  {instance_id}: {phase}")
        return table


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
) -> None:
    """The leaderboard row, statuses, errors by cause, repositories, slowest instances; with
    --compare, what changed against another run (exit status 1 when an instance is no longer
    resolved or a new error appeared, for cron mail)."""
    from .report import compare_runs, print_report, render_comparison, write_html
    from .results import RunDir

    for path in (run, compare):
        if path is not None and not (
            (path / "instances").is_dir() or (path / "config.json").is_file()
        ):
            raise UserError(
                f"{path} is not a run directory.",
                "pass the path `swe-green run` printed.",
            )
    print_report(RunDir(run), console=console)
    comparison = compare_runs(run, compare) if compare is not None else None
    if comparison is not None:
        console.print(render_comparison(comparison))
    if html:
        console.print(f"HTML report: {write_html(RunDir(run), comparison)}")
    if comparison is not None and comparison.regressed:
        raise typer.Exit(1)


# --------------------------------------------------------------------------- demo
def demo_cmd(
    participant: Annotated[str, typer.Option(help="gold, empty or an A2A URL.")] = "gold",
    concurrency: Annotated[int | None, typer.Option()] = None,
) -> None:
    """Evaluate the synthetic instances offline (no GitHub, no Hugging Face)."""
    from .synthetic import build_synthetic

    settings = _settings()
    demo_dir = build_synthetic(settings.data_dir / "demo")
    import os

    os.environ["SWE_GREEN_DATASET"] = str(demo_dir / "instances.jsonl")
    os.environ["SWE_GREEN_MIRROR_DIR"] = str(demo_dir / "mirrors")
    os.environ["SWE_GREEN_RECIPES_FILE"] = str(demo_dir / "recipes.json")
    os.environ.setdefault("SWE_GREEN_UNPRIVILEGED_TESTS", "true")
    os.environ.setdefault("SWE_GREEN_SETUP_STRATEGY", "recipe")
    run_cmd(participant=participant, concurrency=concurrency, participant_id=f"{participant}-demo")


def register(app: typer.Typer) -> None:
    """Add these commands to the main app."""
    app.add_typer(instances_app, name="instances")
    app.add_typer(envs_app, name="envs")
    app.command("validate")(validate_cmd)
    app.command("validation-report")(validation_report_cmd)
    app.command("run")(run_cmd)
    app.command("report")(report_cmd)
    app.command("demo")(demo_cmd)
    from .participants.cli import app as participant_app

    app.add_typer(participant_app, name="participant", help="Reference participants.")
    with contextlib.suppress(ImportError):
        from .server import serve_command

        app.command("serve")(serve_command)
