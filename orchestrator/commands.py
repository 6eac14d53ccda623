"""Command groups of ``swe-green`` beyond the foundation: instances, validate, envs, run,
report, demo, participant, serve."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.live import Live
from rich.table import Table

from .errors import UserError
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
) -> None:  # fmt: skip
    """Build and validate the environments of a selection (gold patch check) with a summary."""
    from .environment import SetupFailed, prepare_instance
    from .pipeline import test_recipe
    from .validation import validate_instance

    settings = _settings(dataset=dataset, setup_strategy=strategy)
    chosen = _select(settings, ids, pattern, repo, count, shard)
    run_id = f"validate-{_stamp()}"
    ctx = _context(settings, settings.runs_dir / run_id, run_id)
    table = Table("instance", "outcome", "detail", "seconds")
    good = 0
    for inst in chosen:
        console.print(f"[cyan]validate[/] {inst.instance_id}")
        try:
            prepared = prepare_instance(ctx, inst)
            check = validate_instance(ctx, inst, prepared.instance_image, test_recipe(prepared))
            outcome = "ok" if check.ok else "environment error"
            detail, seconds = check.message, check.duration
        except SetupFailed as exc:
            outcome, detail, seconds = "environment error", str(exc), 0.0
        good += outcome == "ok"
        table.add_row(inst.instance_id, outcome, detail[:160], f"{seconds:.0f}")
    console.print(table)
    console.print(f"{good}/{len(chosen)} environment(s) valid; logs under {ctx.run_dir.path}")


# --------------------------------------------------------------------------- envs
@envs_app.command("ls")
def envs_ls() -> None:
    """List the cached environment and instance images."""
    from .docker_engine import LABEL_KIND, connect
    from .housekeeping import list_images

    table = Table("image", "kind", "size (MB)", "created")
    for image in list_images(connect(), ("env", "instance")):
        tag = image.tags[0] if image.tags else image.short_id
        table.add_row(
            tag, image.labels.get(LABEL_KIND, ""), f"{image.attrs.get('Size', 0) / 1e6:.0f}",
            image.attrs.get("Created", "")[:19],
        )  # fmt: skip
    console.print(table)


@envs_app.command("prune")
def envs_prune(
    dry_run: Annotated[bool, typer.Option("--dry-run")] = False,
    instances_only: Annotated[
        bool, typer.Option("--instances-only", help="Keep environment images.")
    ] = False,
) -> None:
    """Remove cached environment and instance images (and their validation outcomes)."""
    import shutil

    from .docker_engine import connect
    from .housekeeping import gc

    kinds = ("instance",) if instances_only else ("env", "instance")
    client = connect()
    _, images = gc(client, dry_run=dry_run, image_kinds=kinds)
    # gc also removed leftover containers; that is what a prune wants too
    if not dry_run:
        shutil.rmtree(_settings().data_dir / "validation", ignore_errors=True)
    verb = "would remove" if dry_run else "removed"
    console.print(f"{verb} {len(images)} image(s)")
    for name in images:
        console.print(f"  {name}")


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
    if not settings.log_json:
        # the live display owns the terminal; the log goes to the run directory
        from .log import configure_logging

        log_file = open(Path(run_dir) / "run.log", "a")  # noqa: SIM115 - open for the run
        configure_logging(json_lines=True, level=settings.log_level, file=log_file)
    progress = _LiveProgress(len(instances))
    with _participant(participant, settings) as url:
        _check_reachable(url)
        try:
            with Live(progress.render(), console=console, refresh_per_second=2) as live:
                progress.live = live
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
    """The live display of ``swe-green run``: done/total, statuses, in flight, ETA."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.event = None
        self.live: Live | None = None

    def update(self, event) -> None:  # noqa: ANN001
        self.event = event
        if event.kind == "finished" and event.result is not None:
            r = event.result
            console.print(
                f"  {event.done}/{event.total} {r.instance_id}: [bold]{r.status}[/]"
                + (f" ({r.reason})" if r.reason else "")
                + f" in {r.timings.get('total', 0):.0f}s"
            )
        if self.live is not None:
            self.live.update(self.render())

    def render(self) -> Table:
        table = Table(show_header=False, box=None)
        e = self.event
        if e is None:
            table.add_row("starting ...")
            return table
        eta = ""
        if e.done:
            remaining = (e.elapsed / e.done) * (e.total - e.done)
            eta = f"  ETA {remaining / 60:.1f} min"
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(e.statuses.items())) or "-"
        table.add_row(f"[bold]{e.done}/{e.total}[/] done  {statuses}{eta}")
        for instance_id, phase in e.in_flight.items():
            table.add_row(f"  {instance_id}: {phase}")
        return table


# --------------------------------------------------------------------------- report
def report_cmd(
    run: Annotated[Path, typer.Argument(help="A run directory.")],
    html: Annotated[bool, typer.Option("--html", help="Write report.html.")] = False,
) -> None:
    """The leaderboard row, per-status and per-repository tables, slowest instances."""
    from .report import print_report, write_html
    from .results import RunDir

    if not run.is_dir():
        raise UserError(f"No run directory {run}.", "pass the path `swe-green run` printed.")
    print_report(RunDir(run), console=console)
    if html:
        console.print(f"HTML report: {write_html(RunDir(run))}")


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
    app.command("run")(run_cmd)
    app.command("report")(report_cmd)
    app.command("demo")(demo_cmd)
    from .participants.cli import app as participant_app

    app.add_typer(participant_app, name="participant", help="Reference participants.")
    with contextlib.suppress(ImportError):
        from .server import serve_command

        app.command("serve")(serve_command)
