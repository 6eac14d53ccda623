"""A batch run of ``swe-green run`` and ``swe-green demo``: every check, the run with its live
display, the report."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from orchestrator.errors import UserError
from orchestrator.frontends.cli import common as cli
from orchestrator.frontends.cli.common import console, err_console, start_cli_run
from orchestrator.frontends.cli.live_progress import LiveProgress
from orchestrator.frontends.cli.participant_checks import (
    PARTICIPANT_KINDS,
    check_card,
    participant_name,
)
from orchestrator.frontends.cli.participant_factory import check_participant_spec, open_participant
from orchestrator.frontends.cli.run_plan import RunPlan
from orchestrator.log import run_log
from orchestrator.participant.protocol import A2AParticipant, Participant
from orchestrator.run.leaderboard import write_leaderboard
from orchestrator.run.outcome import EXIT_INTERRUPTED
from orchestrator.settings import Settings, load_settings

if TYPE_CHECKING:
    from orchestrator.context.run_dir import RunDir
    from orchestrator.models import InstanceResult


def run_batch(plan: RunPlan, *, resume: Path | None, output: Path | None) -> None:
    """Check everything, start (or resume) the run, evaluate it with the live display,
    then report. A check that fails leaves no run directory behind."""
    from orchestrator.dataset.instances import resolve
    from orchestrator.setup import check_strategy_settings

    if not plan.participant and not plan.predictions:
        raise UserError(
            "No participant given.",
            f"pass --participant URL (or one of {PARTICIPANT_KINDS}), or --predictions FILE.",
        )
    settings = load_settings(**plan.overrides)
    cli.check_writable(settings, output or resume, "--output" if output else "--resume")
    predicted = None
    if plan.predictions:
        predicted, instances = _predicted(settings, plan)
        plan.participant_id = plan.participant_id or predicted.model
    else:
        check_participant_spec(plan.participant or "", settings, plan.script)
        instances = resolve(settings, plan.selection)
    if not instances:
        raise UserError("The selection holds no instance.", "check --id/--pattern/--repo/--shard.")
    check_strategy_settings(settings)
    with open_participant(
        plan.participant, settings, script=plan.script, predictions=predicted
    ) as participant:
        if isinstance(participant, A2AParticipant):
            check_card(participant.url)
        ctx = start_cli_run(
            settings, "run", resume, output, run_id=plan.run_id,
            participant=plan.participant, participant_id=plan.participant_id,
            predictions=plan.predictions, concurrency=plan.concurrency,
            selection=plan.selection.model_dump(exclude_none=True),
            settings_overrides=plan.overrides, instances=[i.instance_id for i in instances],
            script=str(plan.script) if plan.script else None,
        )  # fmt: skip
        console.print(f"run {ctx.run_id}: {len(instances)} instance(s) -> {ctx.run_dir.path}")
        # the live display owns the terminal; the log goes to <run>/run.log (stderr with -v)
        with _no_husk(ctx.run_dir.path, resume), run_log(ctx.run_dir.path) as log_path:
            results = _evaluate_live(
                ctx, instances, participant, plan.concurrency, resumed=resume is not None
            )
    _report(plan, ctx.run_dir, results, log_path)


def _report(plan: RunPlan, run_dir: RunDir, results: list[InstanceResult], log_path: Path) -> None:
    """The leaderboard entry and the report of a finished run; exit status 3 when it graded
    nothing."""
    from orchestrator.frontends.report import print_report
    from orchestrator.frontends.viewer import write_viewer
    from orchestrator.run.outcome import run_exit_code

    name = plan.participant_id or participant_name(plan.participant or "")
    path = write_leaderboard(run_dir, "agent", name, results)
    print_report(run_dir, console=console)
    console.print(f"log: {log_path}")
    console.print(f"results: {path}")
    console.print(f"viewer: {write_viewer(run_dir)}")
    code = run_exit_code(results)
    if code:
        err_console.print(
            f"graded nothing: all {len(results)} instance(s) ended in an infrastructure, "
            "environment or participant-connection error (exit status 3); see the report above."
        )
        raise typer.Exit(code)


@contextlib.contextmanager
def _no_husk(run_dir: Path, resume: Path | None) -> Iterator[None]:
    """A new run that fails to start (a UserError before any instance finished) leaves no
    run directory behind."""
    import shutil

    try:
        yield
    except UserError:
        if resume is None and not (run_dir / "instances").is_dir():
            shutil.rmtree(run_dir, ignore_errors=True)
        raise


def _predicted(settings: Settings, plan: RunPlan):  # noqa: ANN202
    """The predictions and the instances they are graded on: the file's, or those of the
    selection that the file has a prediction for."""
    from orchestrator.dataset.instances import load_instances, select
    from orchestrator.participant.predictions import load_predictions

    assert plan.predictions is not None
    dataset = load_instances(settings.dataset.dataset, settings.dataset.dataset_split)
    predicted = load_predictions(Path(plan.predictions), (i.instance_id for i in dataset))
    chosen = select(dataset, **plan.selection.model_dump())
    instances = [i for i in chosen if i.instance_id in predicted.patches]
    if not instances:
        raise UserError(
            f"No instance of the selection has a prediction in {plan.predictions}.",
            "widen the selection, or leave it out to grade the file's instances.",
        )
    return predicted, instances


def _evaluate_live(  # noqa: ANN202
    ctx,
    instances,
    participant: Participant,
    concurrency: int | None,
    *,
    resumed: bool,  # noqa: ANN001
):
    """The scheduler's results, with the live display; Ctrl-C or SIGTERM keeps what is done."""
    from orchestrator.run.scheduler import interruptible, run_evaluation
    from orchestrator.run.select_runner import runner_for

    progress = LiveProgress(len(instances))
    runner = runner_for(ctx.settings)  # this host, or the Ray cluster of ray_address
    evaluation = run_evaluation(
        ctx, instances, participant, concurrency=concurrency, on_event=progress.update,
        resume=resumed,
        runner=runner,
    )  # fmt: skip
    try:
        with progress.live_display():
            return asyncio.run(interruptible(evaluation))
    except KeyboardInterrupt:
        runner.clean_unfinished(ctx, ctx.run_dir.finished_ids())
        run_dir = ctx.run_dir.path
        err_console.print(
            f"interrupted: finished results kept in {run_dir}; continue with "
            f"`swe-green run --resume {run_dir}`"
        )
        raise typer.Exit(EXIT_INTERRUPTED) from None
    finally:
        runner.close()
